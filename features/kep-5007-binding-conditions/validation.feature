Feature: KEP-5007 device binding conditions: what a device may list
  A device may list up to 4 bindingConditions, the condition types that must all be True in the
  claim's status.devices before the scheduler binds a pod to a node, and up to 4
  bindingFailureConditions, any of which True makes the scheduler give up on the device. The two
  lists go together, hold label-name-like types without duplicates and must not overlap
  (dra-1.37-spec.md §9, behaviours 1 and 2). kube-apiserver v1.37.2 reports a list over 4 entries
  as TooMany at the list.

  @kep-5007 @core @cluster-check
  Scenario Outline: A device with <defect> is rejected
    When a ResourceSlice "binding" of the test driver whose device has bindingConditions <conditions> and bindingFailureConditions <failures> is submitted
    Then the API server rejects it as Invalid with cause <cause> at "<field>" saying "<message>"

    Examples:
      | defect                                 | conditions                     | failures                       | cause     | field                                       | message                                                       |
      | bindingConditions alone                | ["attached"]                   | []                             | Invalid   | spec.devices[0].bindingFailureConditions    | bindingFailureConditions are required to use bindingConditions |
      | bindingFailureConditions alone         | []                             | ["attach-failed"]              | Invalid   | spec.devices[0].bindingConditions           | bindingConditions are required to use bindingFailureConditions |
      | a condition in both lists              | ["attached"]                   | ["attached"]                   | Invalid   | spec.devices[0].bindingFailureConditions[0] | bindingFailureConditions must not overlap with bindingConditions |
      | a duplicate binding condition          | ["attached", "attached"]       | ["attach-failed"]              | Duplicate | spec.devices[0].bindingConditions[1]        | attached                                                      |
      | a duplicate binding failure condition  | ["attached"]                   | ["failed", "failed"]           | Duplicate | spec.devices[0].bindingFailureConditions[1] | failed                                                        |
      | a condition type that is no label name | ["not attached"]               | ["attach-failed"]              | Invalid   | spec.devices[0].bindingConditions[0]        | name part must consist of alphanumeric characters             |

  @kep-5007 @core @cluster-check
  Scenario Outline: A device with 5 <list> is rejected
    When a ResourceSlice "binding" of the test driver whose device has bindingConditions <conditions> and bindingFailureConditions <failures> is submitted
    Then the API server rejects it as Invalid with cause TooMany at "spec.devices[0].<list>"

    Examples:
      | list                     | conditions                | failures                  |
      | bindingConditions        | ["a", "b", "c", "d", "e"] | ["f"]                     |
      | bindingFailureConditions | ["a"]                     | ["b", "c", "d", "e", "f"] |

  @kep-5007 @core @cluster-check
  Scenario: A device with 4 binding conditions and 4 failure conditions is accepted
    When a ResourceSlice "binding" of the test driver whose device has bindingConditions ["a", "example.com/b", "c", "d"] and bindingFailureConditions ["e", "example.com/f", "g", "h"] is submitted
    Then the API server accepts it
