package cluster

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletAPIBinding is the ClusterRoleBinding that lets the apiserver reach
// the kubelet's API (logs, exec, port-forward, proxy): the kubelet authorizes
// every request by a SubjectAccessReview, and its client certificate carries
// no group that is allowed already (kubeadm binds the same role).
const kubeletAPIBinding = "drakit:kube-apiserver-kubelet-client"

// ensureKubeletAPIAccess binds system:kubelet-api-admin to the apiserver's
// kubelet client user. Idempotent.
func ensureKubeletAPIAccess(ctx context.Context, cfg Config) error {
	client, err := Client(cfg)
	if err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubeletAPIBinding, Labels: map[string]string{"app.kubernetes.io/managed-by": "drakit"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: apiServerKubeletClientUser}},
	}
	_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind the kubelet API role to %s: %w", apiServerKubeletClientUser, err)
	}
	return nil
}
