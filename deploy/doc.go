// Package deploy has no code of its own: its tests check the artifacts that
// ship lock-reaper.
//
//   - dockerfile_test.go parses the Dockerfile with BuildKit's own parser and
//     checks the image (multi-stage, static distroless nonroot, the go build
//     flags), and runs scripts/docker-build-cmd.sh against a fake go command
//     to prove it runs the Dockerfile's go build line exactly.
//   - chart_test.go renders charts/lock-reaper with Helm's Go packages for
//     each mode and each file in charts/lock-reaper/examples, decodes every
//     manifest strictly into its Kubernetes API type, checks the values
//     schema and runs helm lint.
//
// The tests need no cluster, no Docker and no helm binary. deploy is a Go
// module of its own (deploy/go.mod): run its tests with `cd deploy && go test
// ./...`, or `make test`, which runs every module.
package deploy
