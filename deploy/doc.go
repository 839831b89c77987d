// Package deploy has no code of its own: its tests check the artifacts that
// ship lock-reaper.
//
//   - dockerfile_test.go parses the Dockerfile with BuildKit's own parser and
//     checks the image (multi-stage, static distroless nonroot, the go build
//     flags), and runs scripts/docker-build-cmd.sh against a fake go command
//     to prove it runs the Dockerfile's go build line exactly.
//   - dockerfile_bump_test.go runs scripts/bump-base-images.sh against a
//     fake crane.
//   - chart_test.go renders charts/lock-reaper with Helm's Go packages for
//     each mode and each file in charts/lock-reaper/examples, decodes every
//     manifest strictly into its Kubernetes API type, checks the values
//     schema and runs helm lint; chart_pulp_test.go checks the pulp-operator
//     wiring, chart_values_test.go the escape hatches, the RBAC, the
//     sidecar's Kubernetes version, the PodMonitor and secret rotation,
//     chart_notes_test.go the incident commands of the release notes.
//   - alerts_test.go runs promtool test rules on testdata/alerts-*.test.yaml
//     and checks that the alerts and the Grafana dashboard name only metrics
//     that the program's metrics package exports.
//
// The tests need no cluster, no Docker and no helm binary; promtool (Debian
// package prometheus) for the alert tests. deploy is a Go
// module of its own (deploy/go.mod): run its tests with `cd deploy && go test
// ./...`, or `make test`, which runs every module.
package deploy
