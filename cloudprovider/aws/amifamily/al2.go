package amifamily

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const al2BootstrapScript = "/etc/eks/bootstrap.sh"

// al2 bootstraps through /etc/eks/bootstrap.sh, in the last part of a MIME archive after the
// user's own parts.
type al2 struct{}

func (al2) userData(in Input) ([]byte, error) {
	parts, err := userParts(in.UserData, shellPart)
	if err != nil {
		return nil, err
	}
	return writeMIME(append(parts, shellPart(al2Bootstrap(in)))), nil
}

func al2Bootstrap(in Input) string {
	first := al2BootstrapScript + " " + shellQuote(in.Cluster.Name)
	if in.Cluster.Endpoint != "" {
		first += " --apiserver-endpoint " + shellQuote(in.Cluster.Endpoint)
	}
	if in.Cluster.CABundle != "" {
		first += " --b64-cluster-ca " + shellQuote(in.Cluster.CABundle)
	}
	lines := []string{first}
	if dns := in.clusterDNS(); len(dns) > 0 {
		// bootstrap.sh takes a single DNS server.
		lines = append(lines, "--dns-cluster-ip "+shellQuote(dns[0]))
	}
	if in.Cluster.IPFamily == corev1.IPv6Protocol {
		ipv6 := "--ip-family ipv6"
		if in.Cluster.ServiceCIDR != "" {
			ipv6 += " --service-ipv6-cidr " + shellQuote(in.Cluster.ServiceCIDR)
		}
		lines = append(lines, ipv6)
	}
	if in.raid0() {
		lines = append(lines, "--local-disks raid0")
	}
	if in.MaxPods > 0 {
		// Otherwise bootstrap.sh computes its own max pods from the ENI limits.
		lines = append(lines, "--use-max-pods false")
	}
	if flags := append(registrationFlags(in, false), settingFlags(in)...); len(flags) > 0 {
		lines = append(lines, "--kubelet-extra-args "+shellQuote(strings.Join(flags, " ")))
	}
	return "#!/bin/bash -xe\n" +
		"exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n" +
		strings.Join(lines, " \\\n")
}

func (al2) parse(userData []byte) (NodeBootstrap, error) {
	scripts, err := shellScripts(string(userData))
	if err != nil {
		return NodeBootstrap{}, err
	}
	// The last call wins: joinery's part comes after the user's.
	var call []string
	for _, script := range scripts {
		for _, line := range logicalLines(script) {
			if !strings.HasPrefix(strings.TrimSpace(line), al2BootstrapScript) {
				continue
			}
			words, err := shellWords(line)
			if err != nil {
				return NodeBootstrap{}, fmt.Errorf("reading the %s call: %w", al2BootstrapScript, err)
			}
			if len(words) > 0 && words[0] == al2BootstrapScript {
				call = words[1:]
			}
		}
	}
	if call == nil {
		return NodeBootstrap{}, fmt.Errorf("user data has no %s call", al2BootstrapScript)
	}
	var b NodeBootstrap
	for i := 0; i < len(call); i++ {
		if !strings.HasPrefix(call[i], "--") {
			if b.ClusterName == "" {
				b.ClusterName = call[i]
			}
			continue
		}
		// Every bootstrap.sh option takes a value, which may itself start with "--".
		name, value := call[i], ""
		if i+1 < len(call) {
			i++
			value = call[i]
		}
		switch name {
		case "--apiserver-endpoint":
			b.APIServerEndpoint = value
		case "--b64-cluster-ca":
			b.CABundle = value
		case "--dns-cluster-ip":
			b.ClusterDNS = []string{value}
		case "--local-disks":
			b.RAID0 = value == "raid0"
		case "--kubelet-extra-args":
			words, err := shellWords(value)
			if err != nil {
				return NodeBootstrap{}, fmt.Errorf("reading --kubelet-extra-args: %w", err)
			}
			if err := applyKubeletFlags(words, &b); err != nil {
				return NodeBootstrap{}, err
			}
		}
	}
	return b, nil
}

// shellScripts are the shell parts of user data: every text/x-shellscript part of a MIME
// archive, or the whole user data when it is not one.
func shellScripts(userData string) ([]string, error) {
	parts, isMIME, err := parseMIME(userData)
	if err != nil {
		return nil, fmt.Errorf("parsing MIME user data: %w", err)
	}
	if !isMIME {
		return []string{userData}, nil
	}
	var scripts []string
	for _, p := range parts {
		if p.contentType() == "text/x-shellscript" {
			scripts = append(scripts, p.body)
		}
	}
	return scripts, nil
}
