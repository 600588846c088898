Feature: KEP-5004 extended resources: a DeviceClass names only a valid extended resource
  A DeviceClass may name an extended resource (spec.extendedResourceName) that pods then ask for
  in resources.limits as they would ask for a device plugin's resource, and get devices of the
  class through DRA (dra-1.37-spec.md §8). The API server accepts only a valid extended resource
  name there: a domain-qualified name outside kubernetes.io that stays a qualified name with the
  quota prefix "requests.". Anything else is rejected as Invalid at spec.extendedResourceName
  with "must be a valid extended resource name".

  @kep-5004 @core
  Scenario Outline: A DeviceClass whose extendedResourceName is <what> is rejected
    When a DeviceClass is submitted with extendedResourceName "<name>"
    Then the API server rejects it as Invalid with cause Invalid at "spec.extendedResourceName" saying "must be a valid extended resource name"

    Examples:
      | what                                | name                     |
      | a native resource                   | cpu                      |
      | a name without a domain             | gpu                      |
      | in the kubernetes.io domain         | kubernetes.io/gpu        |
      | a quota name (prefix requests.)     | requests.example.com/gpu |
      | not a qualified name                | example.com/two words    |
