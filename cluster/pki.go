package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// PKI file names inside pkiDir.
const (
	caCert              = "ca.crt"
	caKey               = "ca.key"
	frontProxyCACert    = "front-proxy-ca.crt"
	frontProxyCAKey     = "front-proxy-ca.key"
	apiServerCert       = "apiserver.crt"
	apiServerKey        = "apiserver.key"
	kubeletClientCert   = "apiserver-kubelet-client.crt"
	kubeletClientKey    = "apiserver-kubelet-client.key"
	kubeletServingCert  = "kubelet-serving.crt"
	kubeletServingKey   = "kubelet-serving.key"
	etcdCACert          = "etcd-ca.crt"
	etcdCAKey           = "etcd-ca.key"
	etcdServerCert      = "etcd-server.crt"
	etcdServerKey       = "etcd-server.key"
	etcdPeerCert        = "etcd-peer.crt"
	etcdPeerKey         = "etcd-peer.key"
	etcdClientCert      = "apiserver-etcd-client.crt"
	etcdClientKey       = "apiserver-etcd-client.key"
	saKey               = "sa.key"
	saPub               = "sa.pub"
	adminKubeconfig     = "admin.kubeconfig"
	kcmKubeconfig       = "controller-manager.kubeconfig"
	schedulerKubeconfig = "scheduler.kubeconfig"
	kubeletKubeconfig   = "kubelet.kubeconfig"
	pkiCompleteMarker   = ".complete"
)

// apiServerKubeletClientUser is the apiserver's user name towards the
// kubelet, which authorizes it by a SubjectAccessReview.
const apiServerKubeletClientUser = "kube-apiserver-kubelet-client"

// Extended key usages of the certificates.
var (
	serverAuth          = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth          = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	serverAndClientAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
)

// clientIdentity is a client certificate's subject and the kubeconfig it goes into.
type clientIdentity struct {
	kubeconfig string
	user       string
	orgs       []string
}

// clientIdentities are the control plane's and every node's kubelet's.
func clientIdentities(cfg Config) []clientIdentity {
	ids := []clientIdentity{
		{adminKubeconfig, "kubernetes-admin", []string{"system:masters"}},
		{kcmKubeconfig, "system:kube-controller-manager", nil},
		{schedulerKubeconfig, "system:kube-scheduler", nil},
	}
	for _, n := range cfg.nodes() {
		ids = append(ids, clientIdentity{kubeletKubeconfigFile(n), "system:node:" + nodeName(n), []string{"system:nodes"}})
	}
	return ids
}

// nodeFile names a node's PKI file: base for node 1, base with -<i> before
// its extension for node i.
func nodeFile(cfg Config, base string) string {
	if cfg.index() == 1 {
		return base
	}
	ext := filepath.Ext(base)
	return strings.TrimSuffix(base, ext) + "-" + strconv.Itoa(cfg.index()) + ext
}

// A node's kubelet kubeconfig (its identity system:node:<name>) and serving
// certificate and key.
func kubeletKubeconfigFile(cfg Config) string  { return nodeFile(cfg, kubeletKubeconfig) }
func kubeletServingCertFile(cfg Config) string { return nodeFile(cfg, kubeletServingCert) }
func kubeletServingKeyFile(cfg Config) string  { return nodeFile(cfg, kubeletServingKey) }

// ensurePKI generates the cluster's CA, certificates, service-account key
// pair and kubeconfigs unless a complete set exists, and writes the admin
// kubeconfig to KubeconfigPath. A partial set (an interrupted run) is
// replaced whole.
func ensurePKI(cfg Config, now time.Time) error {
	dir := pkiDir(cfg)
	if _, err := os.Stat(filepath.Join(dir, pkiCompleteMarker)); err == nil {
		return installAdminKubeconfig(cfg)
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("generate PKI: %w", err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("generate PKI: %w", err)
	}
	if err := generatePKI(cfg, tmp, now); err != nil {
		return fmt.Errorf("generate PKI: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, pkiCompleteMarker), nil, 0o600); err != nil {
		return fmt.Errorf("generate PKI: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("generate PKI: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("generate PKI: %w", err)
	}
	return installAdminKubeconfig(cfg)
}

func installAdminKubeconfig(cfg Config) error {
	b, err := os.ReadFile(filepath.Join(pkiDir(cfg), adminKubeconfig))
	if err != nil {
		return fmt.Errorf("install kubeconfig: %w", err)
	}
	if err := writeFileAtomic(KubeconfigPath(cfg), b, 0o600); err != nil {
		return fmt.Errorf("install kubeconfig: %w", err)
	}
	return nil
}

func generatePKI(cfg Config, dir string, now time.Time) error {
	ca, caSigner, err := newCA("drakit-ca", now)
	if err != nil {
		return err
	}
	if err := writeCertAndKey(dir, caCert, caKey, ca.Raw, caSigner); err != nil {
		return err
	}
	frontProxy, frontProxySigner, err := newCA("drakit-front-proxy-ca", now)
	if err != nil {
		return err
	}
	if err := writeCertAndKey(dir, frontProxyCACert, frontProxyCAKey, frontProxy.Raw, frontProxySigner); err != nil {
		return err
	}

	etcdCA, etcdCASigner, err := newCA("drakit-etcd-ca", now)
	if err != nil {
		return err
	}
	if err := writeCertAndKey(dir, etcdCACert, etcdCAKey, etcdCA.Raw, etcdCASigner); err != nil {
		return err
	}

	serviceIP, err := firstServiceIP(cfg.ServiceCIDR)
	if err != nil {
		return err
	}
	serving, servingKey, err := issue(ca, caSigner, pkix.Name{CommonName: "kube-apiserver"}, now, serverAuth,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.IP(serviceIP.AsSlice())})
	if err != nil {
		return err
	}
	if err := writeCertAndKey(dir, apiServerCert, apiServerKey, serving, servingKey); err != nil {
		return err
	}
	leaves := []struct {
		cert, key string
		ca        *x509.Certificate
		caSigner  crypto.Signer
		cn        string
		usages    []x509.ExtKeyUsage
	}{
		// The apiserver's identity towards the kubelet (RBAC:
		// system:kubelet-api-admin, bound by Up).
		{kubeletClientCert, kubeletClientKey, ca, caSigner, apiServerKubeletClientUser, clientAuth},
		// etcd has a CA of its own: no certificate of the cluster CA (a
		// kubelet's, an admin's) opens etcd.
		{etcdServerCert, etcdServerKey, etcdCA, etcdCASigner, "drakit-etcd-server", serverAndClientAuth},
		{etcdPeerCert, etcdPeerKey, etcdCA, etcdCASigner, "drakit-etcd-peer", serverAndClientAuth},
		{etcdClientCert, etcdClientKey, etcdCA, etcdCASigner, "kube-apiserver-etcd-client", clientAuth},
	}
	for _, l := range leaves {
		var ips []net.IP
		var names []string
		if slices.Contains(l.usages, x509.ExtKeyUsageServerAuth) {
			ips, names = []net.IP{net.ParseIP(cfg.NodeName)}, []string{"localhost"}
			if cfg.NodeName != "127.0.0.1" {
				ips = append(ips, net.ParseIP("127.0.0.1"))
			}
		}
		der, signer, err := issue(l.ca, l.caSigner, pkix.Name{CommonName: l.cn}, now, l.usages, names, ips)
		if err != nil {
			return err
		}
		if err := writeCertAndKey(dir, l.cert, l.key, der, signer); err != nil {
			return err
		}
	}
	// Every kubelet's serving certificate, which the apiserver verifies,
	// for the node's address.
	for _, n := range cfg.nodes() {
		ips := []net.IP{net.ParseIP(nodeName(n))}
		if nodeName(n) != "127.0.0.1" {
			ips = append(ips, net.ParseIP("127.0.0.1"))
		}
		der, signer, err := issue(ca, caSigner, pkix.Name{CommonName: "system:node:" + nodeName(n)}, now, serverAuth, []string{"localhost"}, ips)
		if err != nil {
			return err
		}
		if err := writeCertAndKey(dir, kubeletServingCertFile(n), kubeletServingKeyFile(n), der, signer); err != nil {
			return err
		}
	}

	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return fmt.Errorf("encode service-account public key: %w", err)
	}
	if err := writePEM(filepath.Join(dir, saKey), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa)); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, saPub), "PUBLIC KEY", pub); err != nil {
		return err
	}

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	for _, id := range clientIdentities(cfg) {
		der, signer, err := issue(ca, caSigner, pkix.Name{CommonName: id.user, Organization: id.orgs}, now, clientAuth, nil, nil)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(signer.(*ecdsa.PrivateKey))
		if err != nil {
			return fmt.Errorf("encode key of %s: %w", id.user, err)
		}
		kc := kubeconfig(APIServerURL(cfg), caPEM, id.user,
			pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
		if err := clientcmd.WriteToFile(kc, filepath.Join(dir, id.kubeconfig)); err != nil {
			return fmt.Errorf("write kubeconfig %s: %w", id.kubeconfig, err)
		}
	}
	return nil
}

// kubeconfig builds a self-contained kubeconfig with embedded certificates.
func kubeconfig(server string, caPEM []byte, user string, certPEM, keyPEM []byte) clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["drakit"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts["drakit"] = &clientcmdapi.Context{Cluster: "drakit", AuthInfo: user}
	kc.CurrentContext = "drakit"
	return *kc
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return k, nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return n, nil
}

// newCA returns a self-signed CA certificate valid for ten years.
func newCA(cn string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA %s: %w", cn, err)
	}
	return cert, key, nil
}

// issue signs a leaf certificate, valid for one year, with a new key.
func issue(ca *x509.Certificate, caSigner crypto.Signer, subject pkix.Name, now time.Time, usages []x509.ExtKeyUsage,
	dnsNames []string, ips []net.IP,
) ([]byte, crypto.Signer, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caSigner)
	if err != nil {
		return nil, nil, fmt.Errorf("issue certificate %s: %w", subject.CommonName, err)
	}
	return der, key, nil
}

func writeCertAndKey(dir, certName, keyName string, certDER []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	if err != nil {
		return fmt.Errorf("encode key %s: %w", keyName, err)
	}
	if err := writePEM(filepath.Join(dir, certName), "CERTIFICATE", certDER); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, keyName), "EC PRIVATE KEY", keyDER)
}

func writePEM(path, blockType string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces path with data through a temporary file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
