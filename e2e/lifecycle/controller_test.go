package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// Timers the suite's tests shorten so that garbage collection and the registration timeout
// happen within a test's patience.
var shortTimers = []string{"--gc-interval=5s", "--registration-ttl=30s"}

// restartTimeout bounds a restart of joinery-controller: the new process waits for the dead
// leader's 15 s lease to expire before it acts.
const restartTimeout = 2 * time.Minute

// shortTimersOn records that joinery-controller was restarted with shortTimers; the suite's
// tests run one after the other.
var shortTimersOn bool

// killController kills joinery-controller as a crash would (SIGKILL); startController brings
// it back with the short timers.
func killController(t *testing.T) {
	t.Helper()
	env.RequireLocal(t)
	if err := env.Cluster.KillComponent(localcluster.JoineryController); err != nil {
		t.Fatal(err)
	}
}

func startController(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), restartTimeout)
	defer cancel()
	if err := env.Cluster.StartComponent(ctx, localcluster.JoineryController, shortTimers...); err != nil {
		t.Fatal(err)
	}
	shortTimersOn = true
}

// withShortTimers makes sure joinery-controller runs with the short timers, restarting it the
// first time.
func withShortTimers(t *testing.T) {
	t.Helper()
	env.RequireLocal(t)
	if !shortTimersOn {
		killController(t)
		startController(t)
	}
}

// kwokProvider is the kwok cloud provider as joinery-controller builds it, for a test to do
// what the controller would have done before it was killed.
func kwokProvider(t *testing.T) *kwok.CloudProvider {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(fmt.Errorf("client: %w", err))
	}
	cp, err := kwok.New(c, kwok.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cp
}
