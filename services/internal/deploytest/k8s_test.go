package deploytest

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/services/node"
)

// healthName is the grpc.health.v1 name each service's node registers
// (grpcserver.Register: its gRPC service name); the gateway registers none.
var healthName = map[string]string{
	"queue":    queuev1.QueueService_ServiceDesc.ServiceName,
	"ingest":   ingestv1.IngestService_ServiceDesc.ServiceName,
	"registry": registryv1.RegistryService_ServiceDesc.ServiceName,
	"realtime": realtimev1.RealtimeService_ServiceDesc.ServiceName,
	"admin":    adminv1.AdminService_ServiceDesc.ServiceName,
	"gateway":  "",
}

// services is what a Deployment's node runs, from its `serve SPEC`.
func services(t *testing.T, d *appsv1.Deployment) []string {
	t.Helper()
	args := mainContainer(t, d).Args
	require.Len(t, args, 2, "%s: args are `serve SPEC`", d.Name)
	require.Equal(t, "serve", args[0], d.Name)
	s, err := node.ParseServices(args[1])
	require.NoError(t, err, d.Name)
	return s
}

func TestK8sSingleRunsEverythingInOneDeployment(t *testing.T) {
	t.Parallel()
	m := build(t, k8sSingle)
	require.Len(t, m.deployments, 1)
	require.Equal(t, []string{"serve", "all"}, mainContainer(t, m.deployments[0]).Args)
}

func TestK8sSplitHasOneDeploymentPerService(t *testing.T) {
	t.Parallel()
	m := build(t, k8sSplit)
	var ran []string
	for _, d := range m.deployments {
		s := services(t, d)
		require.Len(t, s, 1, "%s runs one service", d.Name)
		ran = append(ran, s[0])
	}
	slices.Sort(ran)
	require.Equal(t, node.All, ran, "exactly one Deployment per service")
	require.Len(t, healthName, len(node.All), "a health name for every service")

	// The gateway finds the services through the registry: no static upstream.
	for _, d := range m.deployments {
		for _, e := range mainContainer(t, d).Env {
			require.NotRegexp(t, `^SWITCHBOARD_(UPSTREAM_|GATEWAY_UPSTREAM)`, e.Name, d.Name)
		}
	}
	for k := range m.configMap(t).Data {
		require.NotRegexp(t, `^SWITCHBOARD_(UPSTREAM_|GATEWAY_UPSTREAM)`, k)
	}
}

// Readiness is the health of the one service a Deployment runs (a node that
// runs several reports them all alike, as ""); liveness and startup are the
// overall status, which a database blip leaves SERVING (degraded).
func TestK8sProbesUseTheNodesHealthNames(t *testing.T) {
	t.Parallel()
	for _, m := range buildAll(t) {
		for _, d := range m.deployments {
			c := mainContainer(t, d)
			grpcPort := port(t, c, "grpc")
			want := ""
			if s := services(t, d); len(s) == 1 {
				want = healthName[s[0]]
			}
			for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
				require.NotNil(t, p, "%s: %sProbe", d.Name, kind)
				require.NotNil(t, p.GRPC, "%s: %sProbe must be the native grpc probe", d.Name, kind)
				require.Equal(t, grpcPort, p.GRPC.Port, "%s: %sProbe port", d.Name, kind)
				name := ""
				if p.GRPC.Service != nil {
					name = *p.GRPC.Service
				}
				if kind == "readiness" {
					require.Equal(t, want, name, "%s: readiness health name", d.Name)
				} else {
					require.Empty(t, name, "%s: %s uses the overall status", d.Name, kind)
				}
			}
			// Liveness tolerates more than readiness does before acting.
			window := func(p *corev1.Probe) int32 { return p.PeriodSeconds * p.FailureThreshold }
			require.Greater(t, window(c.LivenessProbe), window(c.ReadinessProbe), "%s: liveness window", d.Name)
		}
	}
}

func TestK8sMigrationJobRunsFirst(t *testing.T) {
	t.Parallel()
	for _, m := range buildAll(t) {
		require.Len(t, m.jobs, 1, "%s: one migration Job", m.overlay)
		job := m.jobs[0]
		require.Len(t, job.Spec.Template.Spec.Containers, 1)
		mc := job.Spec.Template.Spec.Containers[0]
		require.Equal(t, []string{"migrate", "up"}, mc.Args, "%s: the Job runs `migrate up`", m.overlay)
		requireEnvFrom(t, m, job.Name, mc)
		require.Contains(t, []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure},
			job.Spec.Template.Spec.RestartPolicy)

		// Every Deployment waits for the schema the Job writes, with the
		// same image (the version it waits for is the image's own).
		for _, d := range m.deployments {
			c := mainContainer(t, d)
			require.Equal(t, mc.Image, c.Image, "%s: the Job and the Deployment run one image", d.Name)
			idx := slices.IndexFunc(d.Spec.Template.Spec.InitContainers, func(ic corev1.Container) bool {
				return slices.Equal(ic.Args, []string{"migrate", "wait"})
			})
			require.GreaterOrEqual(t, idx, 0, "%s: an initContainer runs `migrate wait`", d.Name)
			ic := d.Spec.Template.Spec.InitContainers[idx]
			require.Equal(t, c.Image, ic.Image, d.Name)
			requireEnvFrom(t, m, d.Name, ic)
			requireEnvFrom(t, m, d.Name, c)

			// The wait outlasts the Job, so a slow migration does not put
			// the pods into crash-loop back-off.
			require.NotNil(t, job.Spec.ActiveDeadlineSeconds, "%s: the Job's activeDeadlineSeconds", m.overlay)
			wait := time.Duration(0)
			for _, e := range ic.Env {
				if e.Name == config.EnvStartupTimeout {
					var err error
					wait, err = time.ParseDuration(e.Value)
					require.NoError(t, err, d.Name)
				}
			}
			require.GreaterOrEqual(t, wait, time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second,
				"%s: `migrate wait` waits (%s) as long as the Job may run", d.Name, config.EnvStartupTimeout)
		}
	}
}

// requireEnvFrom: the container loads the overlay's ConfigMap and Secret.
func requireEnvFrom(t *testing.T, m *manifests, owner string, c corev1.Container) {
	t.Helper()
	var cm, sec bool
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil && e.ConfigMapRef.Name == m.configMap(t).Name {
			cm = true
		}
		if e.SecretRef != nil && e.SecretRef.Name == m.secret(t).Name {
			sec = true
		}
	}
	require.True(t, cm, "%s/%s: envFrom the ConfigMap %s", owner, c.Name, m.configMap(t).Name)
	require.True(t, sec, "%s/%s: envFrom the Secret %s", owner, c.Name, m.secret(t).Name)
}

func TestK8sPodsAreLockedDown(t *testing.T) {
	t.Parallel()
	for _, m := range buildAll(t) {
		pods := map[string]corev1.PodSpec{}
		for _, d := range m.deployments {
			pods[d.Name] = d.Spec.Template.Spec
		}
		for _, j := range m.jobs {
			pods[j.Name] = j.Spec.Template.Spec
		}
		for name, pod := range pods {
			psc := pod.SecurityContext
			require.NotNil(t, psc, name)
			require.True(t, ptrTrue(psc.RunAsNonRoot), "%s: runAsNonRoot", name)
			require.NotNil(t, psc.RunAsUser, name)
			require.NotZero(t, *psc.RunAsUser, name)
			require.NotNil(t, psc.SeccompProfile, name)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type, name)
			require.False(t, ptrTrue(pod.AutomountServiceAccountToken) || pod.AutomountServiceAccountToken == nil,
				"%s: no service account token (the node never calls the API)", name)
			require.False(t, ptrTrue(pod.EnableServiceLinks) || pod.EnableServiceLinks == nil,
				"%s: service links would inject SWITCHBOARD_*-like variables", name)
			for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				sc := c.SecurityContext
				require.NotNil(t, sc, "%s/%s", name, c.Name)
				require.True(t, ptrTrue(sc.ReadOnlyRootFilesystem), "%s/%s: read-only root", name, c.Name)
				require.False(t, sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation, "%s/%s: allowPrivilegeEscalation false", name, c.Name)
				require.NotNil(t, sc.Capabilities, "%s/%s", name, c.Name)
				require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, "%s/%s: drop ALL", name, c.Name)
				require.Empty(t, sc.Capabilities.Add, "%s/%s", name, c.Name)
				require.Nil(t, sc.Privileged, "%s/%s", name, c.Name)
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					require.Contains(t, c.Resources.Requests, r, "%s/%s: requests.%s", name, c.Name, r)
				}
				require.Contains(t, c.Resources.Limits, corev1.ResourceMemory, "%s/%s: limits.memory", name, c.Name)
			}
		}
	}
}

func ptrTrue(b *bool) bool { return b != nil && *b }

// podsMatching lists the Deployments (and Jobs) whose pods a selector picks.
func podsMatching(t *testing.T, m *manifests, sel labels.Selector) []string {
	t.Helper()
	require.False(t, sel.Empty(), "%s: an empty selector picks every pod", m.overlay)
	var out []string
	for _, d := range m.deployments {
		if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, d.Name)
		}
	}
	for _, j := range m.jobs {
		if sel.Matches(labels.Set(j.Spec.Template.Labels)) {
			out = append(out, j.Name)
		}
	}
	return out
}

func deployment(m *manifests, name string) *appsv1.Deployment {
	for _, d := range m.deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

func TestK8sServicesAndBudgetsSelectTheirDeployment(t *testing.T) {
	t.Parallel()
	for _, m := range buildAll(t) {
		require.Len(t, m.services, len(m.deployments), "%s: a Service per Deployment", m.overlay)
		require.Len(t, m.pdbs, len(m.deployments), "%s: a PodDisruptionBudget per Deployment", m.overlay)
		for _, d := range m.deployments {
			sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			require.NoError(t, err)
			require.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)), "%s: selector matches its pods", d.Name)
			require.Equal(t, []string{d.Name}, podsMatching(t, m, sel), "%s: selector picks only its own pods", d.Name)
		}
		for _, s := range m.services {
			picked := podsMatching(t, m, labels.SelectorFromSet(s.Spec.Selector))
			require.Len(t, picked, 1, "Service %s must select exactly one Deployment's pods, got %v", s.Name, picked)
			d := deployment(m, picked[0])
			require.NotNil(t, d, "Service %s selects %s, which is not a Deployment", s.Name, picked[0])
			c := mainContainer(t, d)
			require.NotEmpty(t, s.Spec.Ports, s.Name)
			for _, p := range s.Spec.Ports {
				require.True(t, slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
					return cp.Name == p.TargetPort.String() || cp.ContainerPort == p.TargetPort.IntVal
				}), "Service %s port %s targets %s, which %s does not declare", s.Name, p.Name, p.TargetPort.String(), d.Name)
			}
		}
		for _, p := range m.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			require.NoError(t, err)
			picked := podsMatching(t, m, sel)
			require.Len(t, picked, 1, "PodDisruptionBudget %s must select exactly one Deployment's pods, got %v", p.Name, picked)
			require.NotNil(t, deployment(m, picked[0]), p.Name)
			// minAvailable would block draining a one-replica Deployment.
			require.NotNil(t, p.Spec.MaxUnavailable, "%s: maxUnavailable", p.Name)
			require.Nil(t, p.Spec.MinAvailable, p.Name)
		}
	}
}
