// Package deploytest validates the deployment files under deploy/: the Docker
// Compose cluster (deploy/compose/compose.yaml, loaded with compose-go the way
// `docker compose` loads it) and the image's Dockerfile (deploy/docker). It
// needs neither Docker nor a database, so the checks run with every `go test`.
// The package holds tests only.
package deploytest
