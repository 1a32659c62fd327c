package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/controller/nodeclaim"
)

// awaitTimeout bounds each wait for the controllers; they react within a second, the rest is
// room for a loaded machine.
const awaitTimeout = 60 * time.Second

// prepare creates what every test needs once: the logger and the default ServiceAccount that
// pods in "default" need (no kube-controller-manager runs to create it).
func prepare(ctx context.Context) error {
	logFile, err := os.Create(filepath.Join(cluster.LogsDir(), "nodeclaim-controllers.log"))
	if err != nil {
		return fmt.Errorf("create controller log: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: metav1.NamespaceDefault}}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := admin.Create(ctx, sa)
		return err == nil || apierrors.IsAlreadyExists(err), nil // the namespace may not exist yet
	})
}

// errCrashed is what every call of a crashed controller returns.
var errCrashed = errors.New("controller crashed")

// when says where a crash happens relative to the call it is attached to.
type when int

const (
	never  when = iota
	before      // the call never reaches the API server or the cloud
	after       // the call takes effect, its caller never learns so
)

// call is one write of the controllers, to the API server or to the cloud provider.
type call struct {
	verb        string // create, patch, update, delete; cloud-create, cloud-delete
	subresource string
	obj         client.Object
}

// crasher kills a controller at the first call its point chooses: from then on every call
// fails, as if the process had died, and crashed is closed.
type crasher struct {
	point   func(call) when
	mu      sync.Mutex
	dead    bool
	crashed chan struct{}
}

func newCrasher(point func(call) when) *crasher {
	return &crasher{point: point, crashed: make(chan struct{})}
}

func (c *crasher) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// decide returns where to crash around cl, once.
func (c *crasher) decide(cl call) (when, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return never, errCrashed
	}
	return c.point(cl), nil
}

func (c *crasher) die() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dead {
		c.dead = true
		close(c.crashed)
	}
	return errCrashed
}

// do runs f unless the controller is dead, crashing before or after it as point decides.
func (c *crasher) do(cl call, f func() error) error {
	at, err := c.decide(cl)
	if err != nil {
		return err
	}
	if at == before {
		return c.die()
	}
	err = f()
	if at == after && err == nil {
		return c.die()
	}
	return err
}

func (c *crasher) read(f func() error) error {
	if c.isDead() {
		return errCrashed
	}
	return f()
}

// funcs intercepts every call of the controllers' client.
func (c *crasher) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return c.read(func() error { return cl.Get(ctx, key, obj, opts...) })
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return c.read(func() error { return cl.List(ctx, list, opts...) })
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return c.do(call{verb: "create", obj: obj}, func() error { return cl.Create(ctx, obj, opts...) })
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return c.do(call{verb: "delete", obj: obj}, func() error { return cl.Delete(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return c.do(call{verb: "update", obj: obj}, func() error { return cl.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return c.do(call{verb: "patch", obj: obj}, func() error { return cl.Patch(ctx, obj, patch, opts...) })
		},
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			return c.do(call{verb: "create", subresource: sub, obj: obj}, func() error { return cl.SubResource(sub).Create(ctx, obj, subObj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return c.do(call{verb: "update", subresource: sub, obj: obj}, func() error { return cl.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return c.do(call{verb: "patch", subresource: sub, obj: obj}, func() error { return cl.SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
	}
}

// crashingProvider is the kwok provider whose launches and terminations can crash.
type crashingProvider struct {
	*kwok.CloudProvider
	crash *crasher
}

func (p *crashingProvider) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	var launched *karpv1.NodeClaim
	err := p.crash.do(call{verb: "cloud-create", obj: nc}, func() error {
		var err error
		launched, err = p.CloudProvider.Create(ctx, nc)
		return err
	})
	return launched, err
}

func (p *crashingProvider) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	return p.crash.do(call{verb: "cloud-delete", obj: nc}, func() error { return p.CloudProvider.Delete(ctx, nc) })
}

// controllers is one run of the NodeClaim controllers, as one joinery-controller process.
type controllers struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startControllers runs the NodeClaim controllers with the kwok provider until stop; crash,
// when not nil, decides where they die.
func startControllers(t *testing.T, crash *crasher) *controllers {
	t.Helper()
	mgr, err := ctrl.NewManager(restConfig(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every run registers the same controllers again, as a restarted process does.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil || crash == nil {
				return c, err
			}
			return interceptor.NewClient(c, crash.funcs()), nil
		},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	kp, err := kwok.New(mgr.GetClient(), kwok.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cp cloudprovider.CloudProvider = kp
	if crash != nil {
		cp = &crashingProvider{CloudProvider: kp, crash: crash}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := nodeclaim.Setup(ctx, mgr, cp, nodeclaim.Options{Namespace: metav1.NamespaceSystem}); err != nil {
		cancel()
		t.Fatalf("setting up controllers: %v", err)
	}
	run := &controllers{cancel: cancel, done: make(chan error, 1)}
	go func() { run.done <- mgr.Start(ctx) }()
	t.Cleanup(run.stop)
	return run
}

// stop ends the run and waits for the manager to return.
func (r *controllers) stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

// awaitCrash waits for crash to happen, then stops run as the dead process would be.
func awaitCrash(t *testing.T, run *controllers, crash *crasher) {
	t.Helper()
	select {
	case <-crash.crashed:
	case <-time.After(awaitTimeout):
		t.Fatal("the controllers never reached the crash point")
	}
	run.stop()
}

// newNodeClass creates a Ready KWOKNodeClass (its status defaults to Ready).
func newNodeClass(t *testing.T) string {
	t.Helper()
	class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "class-" + rand.String(5)}}
	create(t, class)
	return class.Name
}

// newNodeClaim creates a NodeClaim for one m5.large on-demand instance.
func newNodeClaim(t *testing.T, class string) *karpv1.NodeClaim {
	t.Helper()
	name := "claim-" + rand.String(5)
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "restart"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind, Name: class},
		},
	}
	create(t, nc)
	return nc
}

// create stores obj and deletes it (finalizers removed) when the test ends.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := admin.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { forceDelete(obj) })
}

// forceDelete removes obj whatever its finalizers, so one test's leftovers do not reach the next.
func forceDelete(obj client.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = client.IgnoreNotFound(admin.Delete(ctx, obj, client.GracePeriodSeconds(0)))
	if err := admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil && len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		_ = admin.Update(ctx, obj)
	}
}

// await polls check until it holds.
func await(t *testing.T, what string, check func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, awaitTimeout, true, func(ctx context.Context) (bool, error) {
		ok, err := check(ctx)
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// awaitGone waits until obj no longer exists.
func awaitGone(t *testing.T, obj client.Object) {
	t.Helper()
	await(t, fmt.Sprintf("%T %s to go", obj, obj.GetName()), func(ctx context.Context) (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("still there")
	})
}

// get re-reads obj.
func get(t *testing.T, obj client.Object) {
	t.Helper()
	if err := admin.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("getting %T %s: %v", obj, obj.GetName(), err)
	}
}

// nodesWithProviderID lists the Nodes with providerID: the kwok provider's instances.
func nodesWithProviderID(t *testing.T, providerID string) []corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := admin.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Node
	for _, n := range list.Items {
		if n.Spec.ProviderID == providerID {
			out = append(out, n)
		}
	}
	return out
}
