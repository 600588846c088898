package cluster

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/client-go/tools/clientcmd"
)

// testConfig is a config with its own directories. The run dir is made
// with a short name: t.TempDir's, named after the test, can exceed the
// socket path budget Validate enforces.
func testConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig()
	runDir, err := os.MkdirTemp("", "drakit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	cfg.RunDir = runDir
	cfg.ComponentsDir = t.TempDir()
	cfg.ImagesDir = t.TempDir()
	return cfg
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s: no CERTIFICATE block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func TestEnsurePKI(t *testing.T) {
	cfg := testConfig(t)
	now := time.Now()
	if err := ensurePKI(cfg, now); err != nil {
		t.Fatalf("ensurePKI: %v", err)
	}
	dir := pkiDir(cfg)
	ca := readCert(t, filepath.Join(dir, caCert))
	if !ca.IsCA {
		t.Error("ca.crt is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	// The serving certificate covers every name clients use.
	serving := readCert(t, filepath.Join(dir, apiServerCert))
	for _, name := range []string{"127.0.0.1", "10.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("apiserver certificate does not verify for %s: %v", name, err)
		}
	}
	if _, err := serving.Verify(x509.VerifyOptions{DNSName: "10.0.0.2", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("apiserver certificate verifies for 10.0.0.2, which it must not name")
	}
	if !serving.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("apiserver certificate IPs %v", serving.IPAddresses)
	}

	// etcd's certificates come from a CA of its own, so that no client
	// certificate of the cluster CA opens etcd; the kubelet serves with a
	// certificate of the cluster CA for the node's address.
	etcdRoots := x509.NewCertPool()
	etcdRoots.AddCert(readCert(t, filepath.Join(dir, etcdCACert)))
	for _, c := range []struct {
		file  string
		roots *x509.CertPool
		usage x509.ExtKeyUsage
		name  string
	}{
		{etcdServerCert, etcdRoots, x509.ExtKeyUsageServerAuth, "127.0.0.1"},
		{etcdPeerCert, etcdRoots, x509.ExtKeyUsageClientAuth, ""},
		{etcdClientCert, etcdRoots, x509.ExtKeyUsageClientAuth, ""},
		{kubeletServingCert, roots, x509.ExtKeyUsageServerAuth, "127.0.0.1"},
		{kubeletClientCert, roots, x509.ExtKeyUsageClientAuth, ""},
	} {
		cert := readCert(t, filepath.Join(dir, c.file))
		if _, err := cert.Verify(x509.VerifyOptions{Roots: c.roots, DNSName: c.name, KeyUsages: []x509.ExtKeyUsage{c.usage}, CurrentTime: now}); err != nil {
			t.Errorf("%s does not verify: %v", c.file, err)
		}
	}
	for _, file := range []string{adminKubeconfig, kubeletKubeconfig} {
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(rc.CertData)
		cert, _ := x509.ParseCertificate(block.Bytes)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: etcdRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err == nil {
			t.Errorf("the client certificate of %s verifies against etcd's CA: it would open etcd", file)
		}
	}

	// Each kubeconfig points at the apiserver on 127.0.0.1 with the CA and a
	// client certificate of the right identity.
	wantIDs := map[string]struct {
		cn   string
		orgs []string
	}{
		adminKubeconfig:     {"kubernetes-admin", []string{"system:masters"}},
		kcmKubeconfig:       {"system:kube-controller-manager", nil},
		schedulerKubeconfig: {"system:kube-scheduler", nil},
		kubeletKubeconfig:   {"system:node:127.0.0.1", []string{"system:nodes"}},
	}
	for file, want := range wantIDs {
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if rc.Host != "https://127.0.0.1:6443" {
			t.Errorf("%s: server %s", file, rc.Host)
		}
		if !bytes.Equal(rc.CAData, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})) {
			t.Errorf("%s: CA data is not the cluster CA", file)
		}
		block, _ := pem.Decode(rc.CertData)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("%s: client certificate: %v", file, err)
		}
		if cert.Subject.CommonName != want.cn || !cmp.Equal(cert.Subject.Organization, want.orgs, cmpopts.EquateEmpty()) {
			t.Errorf("%s: subject CN=%s O=%v, want CN=%s O=%v", file, cert.Subject.CommonName, cert.Subject.Organization, want.cn, want.orgs)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err != nil {
			t.Errorf("%s: client certificate does not verify as a client: %v", file, err)
		}
	}
	admin, _ := os.ReadFile(filepath.Join(dir, adminKubeconfig))
	installed, _ := os.ReadFile(KubeconfigPath(cfg))
	if !bytes.Equal(admin, installed) {
		t.Error("KubeconfigPath is not the admin kubeconfig")
	}

	// The service-account key pair matches.
	b, _ := os.ReadFile(filepath.Join(dir, saKey))
	block, _ := pem.Decode(b)
	priv, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, saPub))
	block, _ = pem.Decode(b)
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !priv.PublicKey.Equal(pub.(*rsa.PublicKey)) {
		t.Error("sa.pub does not match sa.key")
	}

	// A complete PKI is kept; an incomplete one is regenerated whole.
	caBefore, _ := os.ReadFile(filepath.Join(dir, caCert))
	if err := ensurePKI(cfg, now); err != nil {
		t.Fatal(err)
	}
	if caAfter, _ := os.ReadFile(filepath.Join(dir, caCert)); !bytes.Equal(caBefore, caAfter) {
		t.Error("second ensurePKI replaced a complete PKI")
	}
	if err := os.Remove(filepath.Join(dir, pkiCompleteMarker)); err != nil {
		t.Fatal(err)
	}
	if err := ensurePKI(cfg, now); err != nil {
		t.Fatal(err)
	}
	if caAfter, _ := os.ReadFile(filepath.Join(dir, caCert)); bytes.Equal(caBefore, caAfter) {
		t.Error("ensurePKI kept an incomplete PKI")
	}
}
