package declaration

// Default fills unset fields, in place:
//
//   - apiVersion and kind: APIVersion and Kind;
//   - deviceKinds[*].identity.env.value: DefaultEnvValue;
//   - deviceKinds[*].observers: cdi, and env when identity.env is set;
//   - deviceKinds[*].partitions.parentKind: the only kind without
//     partitions, when there is exactly one.
//
// Default is idempotent and never fails; Validate reports what it could not
// fill.
func (d *Declaration) Default() {
	if d.APIVersion == "" {
		d.APIVersion = APIVersion
	}
	if d.Kind == "" {
		d.Kind = Kind
	}
	parent, whole := "", 0
	for _, k := range d.DeviceKinds {
		if k.Partitions == nil {
			parent = k.Name
			whole++
		}
	}
	if whole != 1 {
		parent = ""
	}
	for i := range d.DeviceKinds {
		k := &d.DeviceKinds[i]
		if k.Identity.Env != nil && k.Identity.Env.Value == "" {
			k.Identity.Env.Value = DefaultEnvValue
		}
		if len(k.Observers) == 0 {
			k.Observers = []Observer{ObserverCDI}
			if k.Identity.Env != nil {
				k.Observers = append(k.Observers, ObserverEnv)
			}
		}
		if k.Partitions != nil && k.Partitions.ParentKind == "" {
			k.Partitions.ParentKind = parent
		}
	}
}
