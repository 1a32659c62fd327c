package amifamily

import (
	"fmt"
	"strings"
)

const (
	windowsScriptVariable = "$EKSBootstrapScriptFile"
	windowsScriptLine     = `[string]` + windowsScriptVariable + ` = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"`
)

// windows bootstraps through Start-EKSBootstrap.ps1, after the user's PowerShell commands.
type windows struct{}

func (windows) userData(in Input) ([]byte, error) {
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if user := stripPowerShellTags(in.UserData); user != "" {
		b.WriteString(user)
		if !strings.HasSuffix(user, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString(windowsScriptLine + "\n")
	call := "& " + windowsScriptVariable + " -EKSClusterName " + psQuote(in.Cluster.Name)
	if in.Cluster.Endpoint != "" {
		call += " -APIServerEndpoint " + psQuote(in.Cluster.Endpoint)
	}
	if in.Cluster.CABundle != "" {
		call += " -Base64ClusterCA " + psQuote(in.Cluster.CABundle)
	}
	if flags := append(registrationFlags(in, true), settingFlags(in)...); len(flags) > 0 {
		call += " -KubeletExtraArgs " + psQuote(strings.Join(flags, " "))
	}
	if dns := in.clusterDNS(); len(dns) > 0 {
		// The bootstrap script takes a single DNS server.
		call += " -DNSClusterIP " + psQuote(dns[0])
	}
	b.WriteString(call + "\n</powershell>\n")
	return []byte(b.String()), nil
}

// stripPowerShellTags removes the <powershell> wrapper users often keep around their script,
// since joinery writes its own.
func stripPowerShellTags(s string) string {
	trimmed := strings.TrimSpace(s)
	if !strings.HasPrefix(trimmed, "<powershell>") || !strings.HasSuffix(trimmed, "</powershell>") {
		return s
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(trimmed, "<powershell>"), "</powershell>")
	return strings.TrimLeft(inner, "\r\n")
}

func (windows) parse(userData []byte) (NodeBootstrap, error) {
	// The last call wins: joinery's comes after the user's commands.
	var call []string
	for _, line := range strings.Split(string(userData), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "& "+windowsScriptVariable) {
			continue
		}
		words, err := psWords(line)
		if err != nil {
			return NodeBootstrap{}, fmt.Errorf("reading the Start-EKSBootstrap.ps1 call: %w", err)
		}
		call = words[2:]
	}
	if call == nil {
		return NodeBootstrap{}, fmt.Errorf("user data has no Start-EKSBootstrap.ps1 call")
	}
	var b NodeBootstrap
	for i := 0; i+1 < len(call); i += 2 {
		name, value := call[i], call[i+1]
		switch strings.ToLower(name) {
		case "-eksclustername":
			b.ClusterName = value
		case "-apiserverendpoint":
			b.APIServerEndpoint = value
		case "-base64clusterca":
			b.CABundle = value
		case "-dnsclusterip":
			b.ClusterDNS = []string{value}
		case "-kubeletextraargs":
			words, err := shellWords(value)
			if err != nil {
				return NodeBootstrap{}, fmt.Errorf("reading -KubeletExtraArgs: %w", err)
			}
			if err := applyKubeletFlags(words, &b); err != nil {
				return NodeBootstrap{}, err
			}
		}
	}
	return b, nil
}
