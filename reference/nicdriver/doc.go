// Package nicdriver is drakit's reference NIC DRA driver (nic.drakit.dev).
package nicdriver
