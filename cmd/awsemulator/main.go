// Command awsemulator runs joinery's AWS emulator (internal/awsemulator) as a process of
// its own: the emulated EC2, IAM, SSM, Pricing, SQS, EKS (DescribeCluster of --cluster-name,
// with the kubeconfig's API server and CA) and ARC zonal shift APIs at http://ADDRESS:PORT for
// joinery-controller's and joinery-scheduler's --aws-endpoint-url, the admin API under
// /_awstest/ for tests in other processes (awsemulator.AdminClient), and the node agent, which
// registers the emulator's running instances as kwok-managed Nodes of the cluster --kubeconfig
// names and deletes the Nodes of terminated ones.
//
//	awsemulator --port 4566 --kubeconfig .local/kubeconfig --cluster-name joinery
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/awsemulator/nodeagent"
)

type options struct {
	address     string
	port        int
	region      string
	kubeconfig  string
	clusterName string
	interval    time.Duration
	// queues are SQS queues created at start, e.g. joinery-controller's interruption queue.
	queues string
	// readOnlyKeys are access key IDs that may only read, e.g. joinery-scheduler's.
	readOnlyKeys string
	// serviceCIDR is the service range eks:DescribeCluster reports.
	serviceCIDR string
}

func main() {
	var opts options
	flag.StringVar(&opts.address, "address", "127.0.0.1", "address to serve on")
	flag.IntVar(&opts.port, "port", 4566, "port to serve on; 0 picks a free one (printed at start)")
	flag.StringVar(&opts.region, "region", awsemulator.DefaultRegion, "the emulated region (us-west-2 or us-east-1)")
	flag.StringVar(&opts.kubeconfig, "kubeconfig", "", "cluster whose Nodes the node agent registers; empty runs the APIs without the node agent")
	flag.StringVar(&opts.clusterName, "cluster-name", awsemulator.DefaultClusterName, "cluster instances must bootstrap into to become Nodes (joinery-controller's --cluster-name)")
	flag.DurationVar(&opts.interval, "sync-interval", 500*time.Millisecond, "how often the node agent compares instances and Nodes")
	flag.StringVar(&opts.queues, "create-queues", "", "comma-separated SQS queues to create at start, e.g. the interruption queue joinery-controller polls")
	flag.StringVar(&opts.serviceCIDR, "cluster-service-cidr", awsemulator.DefaultEKSCluster.ServiceCIDR, "service CIDR eks:DescribeCluster reports for --cluster-name")
	flag.StringVar(&opts.readOnlyKeys, "read-only-access-keys", "", "comma-separated access key IDs allowed only Describe*, Get* and List* calls, as a read-only IAM policy allows (e.g. joinery-scheduler's)")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(opts, log); err != nil {
		log.Error("awsemulator stopped", "err", err)
		os.Exit(1)
	}
}

func run(opts options, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var agentClient kubernetes.Interface
	// eks:DescribeCluster tells what nodes join: the kubeconfig's API server and CA.
	cluster := awsemulator.EKSCluster{Name: opts.clusterName, ServiceCIDR: opts.serviceCIDR}
	if opts.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
		if err != nil {
			return fmt.Errorf("loading kubeconfig %s: %w", opts.kubeconfig, err)
		}
		if agentClient, err = kubernetes.NewForConfig(cfg); err != nil {
			return fmt.Errorf("creating the cluster client: %w", err)
		}
		ca := cfg.CAData
		if len(ca) == 0 && cfg.CAFile != "" {
			if ca, err = os.ReadFile(cfg.CAFile); err != nil {
				return fmt.Errorf("reading the cluster CA %s: %w", cfg.CAFile, err)
			}
		}
		cluster.Endpoint = cfg.Host
		if len(ca) > 0 {
			cluster.CABundle = base64.StdEncoding.EncodeToString(ca)
		}
	}

	server := awsemulator.NewServer(awsemulator.Options{Region: opts.region, ReadOnlyAccessKeys: splitList(opts.readOnlyKeys), Cluster: cluster})
	defer server.Close()
	for _, queue := range splitList(opts.queues) {
		if _, err := server.CreateQueue(queue); err != nil {
			return fmt.Errorf("creating SQS queue %s: %w", queue, err)
		}
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(opts.address, strconv.Itoa(opts.port)))
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	httpServer := &http.Server{Handler: server.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(listener) }()
	url := "http://" + listener.Addr().String()
	log.Info("serving the AWS emulator", "url", url, "region", server.Region, "admin", url+awsemulator.AdminPathPrefix)

	if agentClient != nil {
		agent := nodeagent.New(server, agentClient, nodeagent.Options{
			ClusterName: opts.clusterName,
			Interval:    opts.interval,
			Logger:      logr.FromSlogHandler(log.Handler()).WithName("nodeagent"),
		})
		go agent.Run(ctx)
		log.Info("node agent running", "cluster", opts.clusterName, "kubeconfig", opts.kubeconfig)
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down: %w", err)
	}
	log.Info("stopped")
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(value string) []string {
	var items []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
