package node_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

// Callers of the access matrix, from nobody to the deployment's administrator.
const (
	anonymous     = "anonymous"
	reader        = "read"
	publisher     = "publisher"
	agent         = "agent"
	tenantAdmin   = "tenant-admin"
	administrator = "administrator"
)

// Who may call what, written out independently of pkg/auth/policy.go: this
// table is the specification (docs/access.md) the policy must meet.
var (
	everyone         = []string{anonymous, reader, publisher, agent, tenantAdmin, administrator}
	onlyAdministr    = []string{administrator}
	tenantAdmins     = []string{tenantAdmin, administrator}
	publishers       = []string{publisher, tenantAdmin, administrator}
	workers          = []string{agent, tenantAdmin, administrator} // admin is everything in the tenant
	enqueuers        = []string{publisher, agent, tenantAdmin, administrator}
	readersAndAgents = []string{reader, agent, tenantAdmin, administrator}
	talkers          = []string{publisher, agent, tenantAdmin, administrator}
)

var accessMatrix = map[string][]string{
	"/switchboard.queue.v1.QueueService/Enqueue":        enqueuers,
	"/switchboard.queue.v1.QueueService/EnqueueBatch":   enqueuers,
	"/switchboard.queue.v1.QueueService/Claim":          workers,
	"/switchboard.queue.v1.QueueService/Heartbeat":      workers,
	"/switchboard.queue.v1.QueueService/HeartbeatBatch": workers,
	"/switchboard.queue.v1.QueueService/CompleteBatch":  workers,
	"/switchboard.queue.v1.QueueService/Complete":       workers,
	"/switchboard.queue.v1.QueueService/Fail":           workers,
	"/switchboard.queue.v1.QueueService/Release":        workers,
	"/switchboard.queue.v1.QueueService/Cancel":         tenantAdmins,
	"/switchboard.queue.v1.QueueService/GetTodo":        readersAndAgents,
	"/switchboard.queue.v1.QueueService/ListTodos":      readersAndAgents,
	"/switchboard.queue.v1.QueueService/Redrive":        tenantAdmins,
	"/switchboard.queue.v1.QueueService/RetryTodo":      tenantAdmins,
	"/switchboard.queue.v1.QueueService/QueueStats":     readersAndAgents,
	"/switchboard.queue.v1.QueueService/PauseQueue":     tenantAdmins,
	"/switchboard.queue.v1.QueueService/ResumeQueue":    tenantAdmins,
	"/switchboard.queue.v1.QueueService/SetQueueLimits": tenantAdmins,
	"/switchboard.queue.v1.QueueService/ListQueues":     readersAndAgents,
	"/switchboard.queue.v1.QueueService/CreateSchedule": tenantAdmins,
	"/switchboard.queue.v1.QueueService/UpdateSchedule": tenantAdmins,
	"/switchboard.queue.v1.QueueService/DeleteSchedule": tenantAdmins,
	"/switchboard.queue.v1.QueueService/GetSchedule":    readersAndAgents,
	"/switchboard.queue.v1.QueueService/ListSchedules":  readersAndAgents,
	"/switchboard.ingest.v1.IngestService/PublishEvent": publishers,
	"/switchboard.ingest.v1.IngestService/GetEvent":     readersAndAgents,
	"/switchboard.ingest.v1.IngestService/ListEvents":   readersAndAgents,
	"/switchboard.ingest.v1.IngestService/ReplayEvent":  enqueuers,
	"/switchboard.ingest.v1.IngestService/ReplayEvents": enqueuers,
	// The delivery log is the endpoint's: GetEndpoint's callers.
	"/switchboard.ingest.v1.IngestService/ListDeliveries": tenantAdmins,

	"/switchboard.registry.v1.RegistryService/GetHealth":  everyone,
	"/switchboard.registry.v1.RegistryService/ListNodes":  onlyAdministr,
	"/switchboard.registry.v1.RegistryService/WatchNodes": onlyAdministr,

	"/switchboard.realtime.v1.RealtimeService/Publish":      talkers,
	"/switchboard.realtime.v1.RealtimeService/Subscribe":    readersAndAgents,
	"/switchboard.realtime.v1.RealtimeService/Presence":     readersAndAgents,
	"/switchboard.realtime.v1.RealtimeService/ListChannels": readersAndAgents,

	"/switchboard.admin.v1.AdminService/CreateHuman":      onlyAdministr,
	"/switchboard.admin.v1.AdminService/GetHuman":         tenantAdmins,
	"/switchboard.admin.v1.AdminService/ListHumans":       tenantAdmins,
	"/switchboard.admin.v1.AdminService/UpdateHuman":      tenantAdmins,
	"/switchboard.admin.v1.AdminService/DeleteHuman":      onlyAdministr,
	"/switchboard.admin.v1.AdminService/CreateAgent":      tenantAdmins,
	"/switchboard.admin.v1.AdminService/GetAgent":         tenantAdmins,
	"/switchboard.admin.v1.AdminService/ListAgents":       tenantAdmins,
	"/switchboard.admin.v1.AdminService/UpdateAgent":      tenantAdmins,
	"/switchboard.admin.v1.AdminService/DeleteAgent":      tenantAdmins,
	"/switchboard.admin.v1.AdminService/CreateEndpoint":   tenantAdmins,
	"/switchboard.admin.v1.AdminService/GetEndpoint":      tenantAdmins,
	"/switchboard.admin.v1.AdminService/ListEndpoints":    tenantAdmins,
	"/switchboard.admin.v1.AdminService/UpdateEndpoint":   tenantAdmins,
	"/switchboard.admin.v1.AdminService/DeleteEndpoint":   tenantAdmins,
	"/switchboard.admin.v1.AdminService/CreateAdapter":    tenantAdmins,
	"/switchboard.admin.v1.AdminService/GetAdapter":       tenantAdmins,
	"/switchboard.admin.v1.AdminService/ListAdapters":     tenantAdmins,
	"/switchboard.admin.v1.AdminService/UpdateAdapter":    tenantAdmins,
	"/switchboard.admin.v1.AdminService/DeleteAdapter":    tenantAdmins,
	"/switchboard.admin.v1.AdminService/GetSetting":       tenantAdmins,
	"/switchboard.admin.v1.AdminService/ListSettings":     tenantAdmins,
	"/switchboard.admin.v1.AdminService/UpdateSetting":    onlyAdministr,
	"/switchboard.admin.v1.AdminService/MintCredential":   tenantAdmins,
	"/switchboard.admin.v1.AdminService/ListCredentials":  tenantAdmins,
	"/switchboard.admin.v1.AdminService/RevokeCredential": tenantAdmins,

	// Endpoint secret rotation, like the other endpoint RPCs.
	"/switchboard.admin.v1.AdminService/AddEndpointSecret":    tenantAdmins,
	"/switchboard.admin.v1.AdminService/RemoveEndpointSecret": tenantAdmins,
}

// serviceFiles are the contracts whose every method the matrix must cover.
var serviceFiles = []protoreflect.FileDescriptor{
	queuev1.File_switchboard_queue_v1_queue_service_proto,
	ingestv1.File_switchboard_ingest_v1_ingest_service_proto,
	registryv1.File_switchboard_registry_v1_registry_service_proto,
	realtimev1.File_switchboard_realtime_v1_realtime_service_proto,
	adminv1.File_switchboard_admin_v1_admin_service_proto,
}

func allMethods() map[string]protoreflect.MethodDescriptor {
	out := map[string]protoreflect.MethodDescriptor{}
	for _, f := range serviceFiles {
		for i := range f.Services().Len() {
			svc := f.Services().Get(i)
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				out[fmt.Sprintf("/%s/%s", svc.FullName(), m.Name())] = m
			}
		}
	}
	return out
}

func TestAccessMatrixCoversEveryRPC(t *testing.T) {
	t.Parallel()
	var missing, extra []string
	methods := allMethods()
	for name := range methods {
		if _, ok := accessMatrix[name]; !ok {
			missing = append(missing, name)
		}
		if _, ok := auth.Policy[name]; !ok {
			missing = append(missing, name+" (no policy rule: denied to all)")
		}
	}
	for name := range accessMatrix {
		if _, ok := methods[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "every RPC needs a row here and a rule in pkg/auth/policy.go")
	require.Empty(t, extra, "rows for RPCs that do not exist")
}
