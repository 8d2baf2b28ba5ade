// Package deploytest validates the deployment files under deploy/: the Docker
// Compose cluster (deploy/compose/compose.yaml, loaded with compose-go the way
// `docker compose` loads it), the image's Dockerfile (deploy/docker) and the
// Kubernetes overlays (deploy/k8s, built with kustomize's Go API the way
// `kubectl apply -k` builds them, decoded strictly into k8s.io/api types). It
// needs neither Docker, a cluster nor a database, so the checks run with every
// `go test`.
// The package holds tests only.
package deploytest
