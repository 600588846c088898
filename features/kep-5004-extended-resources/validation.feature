Feature: KEP-5004 extended resources: a DeviceClass names only a valid extended resource
  A DeviceClass may name an extended resource (spec.extendedResourceName) that pods then ask for
  in resources.limits as they would ask for a device plugin's resource, and get devices of the
  class through DRA (dra-1.37-spec.md §8). The API server accepts only a valid extended resource
  name there: a domain-qualified name outside kubernetes.io that stays a qualified name with the
  quota prefix "requests.". Anything else is rejected as Invalid at spec.extendedResourceName.
  The spec's message "must be a valid extended resource name" is not what v1.37.2 says: its
  declarative validation (format k8s-extended-resource-name) names the rule the name breaks
  (must not have "kubernetes.io/" domain, must not have "requests." prefix).

  @kep-5004 @core @cluster-check
  Scenario Outline: A DeviceClass whose extendedResourceName is <what> is rejected
    When a DeviceClass is submitted with extendedResourceName "<name>"
    Then the API server rejects it as Invalid with cause Invalid at "spec.extendedResourceName" saying "<message>"

    Examples:
      | what                            | name                     | message                                                              |
      | a native resource               | cpu                      | a name must be a domain-prefixed path, such as 'example.com/my-prop' |
      | a name without a domain         | gpu                      | a name must be a domain-prefixed path, such as 'example.com/my-prop' |
      | in the kubernetes.io domain     | kubernetes.io/gpu        | must not have                                                        |
      | a quota name (prefix requests.) | requests.example.com/gpu | must not have                                                        |
      | not a qualified name            | example.com/two words    | name part must consist of alphanumeric characters                    |
