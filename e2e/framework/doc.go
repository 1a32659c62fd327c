// Package framework runs joinery's e2e suites: against the local cluster it starts itself
// (every component as a process on 127.0.0.1), or against another cluster named by
// --kubeconfig or JOINERY_E2E_KUBECONFIG (kind with kwok, or a real one), where tests skip
// what that target cannot do.
//
// A suite's TestMain calls Main; tests use Env's helpers to create objects that are removed
// when the test ends, wait for conditions with explicit timeouts, and get events, NodeClaims,
// nodes, pods and each component's log tail printed when they fail.
package framework
