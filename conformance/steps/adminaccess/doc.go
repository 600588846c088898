// Package adminaccess holds the steps of KEP-5018, admin access to devices
// (features/kep-5018-admin-access): the namespace label that permits
// adminAccess requests, and what the API server stored of them. Claims for
// a named device with admin access are the kit's steps, which KEP-5055
// shares.
package adminaccess
