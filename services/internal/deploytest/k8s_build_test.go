package deploytest

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The Kubernetes manifests (deploy/k8s) are built the way `kubectl apply -k`
// builds them, with kustomize's own Go API (the library kubectl embeds), and
// every object is decoded strictly into the k8s.io/api type of its kind: an
// unknown or misspelt field, a wrong apiVersion or an unexpected kind fails
// here rather than at `kubectl apply`.

const (
	k8sSingle = "deploy/k8s/overlays/single"
	k8sSplit  = "deploy/k8s/overlays/split"
)

var overlays = []string{k8sSingle, k8sSplit}

// manifests is one overlay's objects, by kind.
type manifests struct {
	overlay     string
	configMaps  []*corev1.ConfigMap
	secrets     []*corev1.Secret
	services    []*corev1.Service
	deployments []*appsv1.Deployment
	pdbs        []*policyv1.PodDisruptionBudget
	jobs        []*batchv1.Job
	ingresses   []*networkingv1.Ingress
}

// kustomized caches each overlay's build: the tests only read it, and a
// build is most of their time.
var kustomized sync.Map // overlay -> func() (resmap.ResMap, error)

// build runs kustomize on an overlay (relative to the repository root) and
// decodes what it produces.
func build(t *testing.T, overlay string) *manifests {
	t.Helper()
	dir := filepath.Join(repoRoot(t), overlay)
	once, _ := kustomized.LoadOrStore(overlay, sync.OnceValues(func() (resmap.ResMap, error) {
		return krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	}))
	resources, err := once.(func() (resmap.ResMap, error))()
	require.NoError(t, err, "kustomize build %s", overlay)

	m := &manifests{overlay: overlay}
	for _, r := range resources.Resources() {
		doc, err := r.AsYAML()
		require.NoError(t, err)
		id := fmt.Sprintf("%s: %s/%s %s", overlay, r.GetApiVersion(), r.GetKind(), r.GetName())
		switch gk := r.GetApiVersion() + " " + r.GetKind(); gk {
		case "v1 ConfigMap":
			m.configMaps = append(m.configMaps, decode[corev1.ConfigMap](t, id, doc))
		case "v1 Secret":
			m.secrets = append(m.secrets, decode[corev1.Secret](t, id, doc))
		case "v1 Service":
			m.services = append(m.services, decode[corev1.Service](t, id, doc))
		case "apps/v1 Deployment":
			m.deployments = append(m.deployments, decode[appsv1.Deployment](t, id, doc))
		case "policy/v1 PodDisruptionBudget":
			m.pdbs = append(m.pdbs, decode[policyv1.PodDisruptionBudget](t, id, doc))
		case "batch/v1 Job":
			m.jobs = append(m.jobs, decode[batchv1.Job](t, id, doc))
		case "networking.k8s.io/v1 Ingress":
			m.ingresses = append(m.ingresses, decode[networkingv1.Ingress](t, id, doc))
		default:
			t.Fatalf("%s: no check knows this kind (%s); decode it here and assert what matters", id, gk)
		}
	}
	return m
}

// decode unmarshals one object strictly: unknown fields and duplicate keys
// are errors.
func decode[T any](t *testing.T, id string, doc []byte) *T {
	t.Helper()
	var v T
	require.NoError(t, yaml.UnmarshalStrict(doc, &v), "%s does not decode strictly into %T", id, v)
	return &v
}

// buildAll builds every overlay once per test.
func buildAll(t *testing.T) []*manifests {
	t.Helper()
	out := make([]*manifests, 0, len(overlays))
	for _, o := range overlays {
		out = append(out, build(t, o))
	}
	return out
}

// configMap and secret are the overlay's one ConfigMap and one Secret.
func (m *manifests) configMap(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	require.Len(t, m.configMaps, 1, "%s: one ConfigMap", m.overlay)
	return m.configMaps[0]
}

func (m *manifests) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	require.Len(t, m.secrets, 1, "%s: one Secret", m.overlay)
	return m.secrets[0]
}

// mainContainer is a Deployment's one serving container.
func mainContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	require.Len(t, d.Spec.Template.Spec.Containers, 1, "%s: one container", d.Name)
	return d.Spec.Template.Spec.Containers[0]
}

// port is the number of a container's port by name.
func port(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s declares no port named %q", c.Name, name)
	return 0
}
