package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// etcdMemberName names the single etcd member.
const etcdMemberName = "joinery-local"

// etcd runs a single-member etcd on two free loopback ports, without fsync: the data is
// disposable and fsync dominates its latency on slow disks.
func (c *Cluster) etcd() component {
	return component{
		name: "etcd",
		configure: func() ([]string, error) {
			client, err := freePort()
			if err != nil {
				return nil, err
			}
			peer, err := freePort()
			if err != nil {
				return nil, err
			}
			c.etcdClientPort, c.etcdPeerPort = client, peer
			peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
			return []string{
				"--name=" + etcdMemberName,
				"--data-dir=" + c.dataDir,
				"--listen-client-urls=" + c.etcdURL(),
				"--advertise-client-urls=" + c.etcdURL(),
				"--listen-peer-urls=" + peerURL,
				"--initial-advertise-peer-urls=" + peerURL,
				"--initial-cluster=" + etcdMemberName + "=" + peerURL,
				"--unsafe-no-fsync",
			}, nil
		},
		ready: c.etcdHealthy,
		ports: func() []int { return []int{c.etcdClientPort, c.etcdPeerPort} },
	}
}

// etcdURL is where etcd serves clients.
func (c *Cluster) etcdURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.etcdClientPort) }

// etcdHealthy asks etcd's /health endpoint, which reports true once the member has a leader
// and can serve a linearizable read.
func (c *Cluster) etcdHealthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.etcdURL()+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read /health: %w", err)
	}
	var health struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &health); err != nil {
		return fmt.Errorf("decode /health %q: %w", body, err)
	}
	if health.Health != "true" {
		return fmt.Errorf("etcd unhealthy: %s", health.Reason)
	}
	return nil
}
