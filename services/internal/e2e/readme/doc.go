// Package readme holds the test that keeps README.md's shell blocks true:
// every ```sh (bash, shell, console) block is run as written against a live
// node, or is visibly marked as a template a test cannot run. Its test
// carries the build tag e2e; this file holds no code, so the package builds
// without it.
package readme
