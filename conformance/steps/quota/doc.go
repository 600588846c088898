// Package quota holds the steps of ResourceQuota on devices (KEP-4816's
// quota.feature, KEP-5004's accounting.feature): a quota on the devices of
// the driver's DeviceClass in the scenario's namespace, and what the API
// server's quota admission charged or refused.
package quota
