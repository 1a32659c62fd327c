package amifamily

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMIME(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		isMIME bool
		want   []mimePart
	}{
		{name: "shell script", in: "#!/bin/bash\necho hi\n"},
		{name: "headers without multipart", in: "Content-Type: text/plain\n\nhello\n"},
		{name: "no blank line after headers", in: "Content-Type: multipart/mixed; boundary=b\n--b\n"},
		{
			name:   "parts, preamble, CRLF and folded headers",
			in:     "MIME-Version: 1.0\r\nContent-Type: multipart/mixed;\r\n boundary=\"==b==\"\r\n\r\npreamble\r\n--==b==\r\nContent-Type: text/x-shellscript\r\nX-Extra: 1\r\n\r\necho one\r\n\r\n--==b==\r\n\r\nno headers\r\n--==b==--\r\nepilogue\r\n",
			isMIME: true,
			want: []mimePart{
				{header: []string{"Content-Type: text/x-shellscript", "X-Extra: 1"}, body: "echo one\r\n"},
				{body: "no headers"},
			},
		},
		{
			name:   "archive without its closing delimiter",
			in:     "Content-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n--//\n",
			isMIME: true,
			want:   []mimePart{{header: []string{"Content-Type: application/node.eks.aws"}, body: "kind: NodeConfig"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, isMIME, err := parseMIME(tt.in)
			if err != nil {
				t.Fatalf("parseMIME: %v", err)
			}
			if isMIME != tt.isMIME || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseMIME = %#v, %v; want %#v, %v", got, isMIME, tt.want, tt.isMIME)
			}
		})
	}
}

func TestWriteMIMERoundTripAndBoundaryCollision(t *testing.T) {
	parts := []mimePart{
		{header: []string{shellContentType}, body: "echo '--//'\n--//\nstill the script\n"},
		{header: []string{nodeConfigContentType}, body: "kind: NodeConfig\n"},
	}
	out := string(writeMIME(parts))
	if !strings.Contains(out, `boundary="//0"`) {
		t.Errorf("boundary should move off // when a body contains a --// line:\n%s", out)
	}
	got, isMIME, err := parseMIME(out)
	if err != nil || !isMIME {
		t.Fatalf("parseMIME(writeMIME) = %v, %v", isMIME, err)
	}
	if !reflect.DeepEqual(got, parts) {
		t.Errorf("round trip = %#v, want %#v", got, parts)
	}
	if ct := got[0].contentType(); ct != "text/x-shellscript" {
		t.Errorf("contentType = %q", ct)
	}
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`a 'b c' "d \"e\" \$f" g\ h`, []string{"a", "b c", `d "e" $f`, "g h"}},
		{"/etc/eks/bootstrap.sh 'x' \\\n--flag 'it'\\''s'", []string{"/etc/eks/bootstrap.sh", "x", "--flag", "it's"}},
		{`--node-labels="a=b,c=d" --max-pods=3`, []string{"--node-labels=a=b,c=d", "--max-pods=3"}},
		{`''`, []string{""}},
		{"  ", nil},
	}
	for _, tt := range tests {
		got, err := shellWords(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`'open`, `"open`, `trailing\`} {
		if _, err := shellWords(bad); err == nil {
			t.Errorf("shellWords(%q) should fail", bad)
		}
	}
	for _, s := range []string{"plain", "it's", `"quoted" $x \ y`, ""} {
		if got, err := shellWords(shellQuote(s)); err != nil || !reflect.DeepEqual(got, []string{s}) {
			t.Errorf("shellWords(shellQuote(%q)) = %q, %v", s, got, err)
		}
	}
}

func TestPSWords(t *testing.T) {
	got, err := psWords(`& $F -A 'it''s' -B "say ""hi"" ` + "`" + `"x` + "`" + `"" -C bare`)
	want := []string{"&", "$F", "-A", "it's", "-B", `say "hi" "x"`, "-C", "bare"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("psWords = %q, %v; want %q", got, err, want)
	}
	if _, err := psWords(`-A 'open`); err == nil {
		t.Error("psWords should fail on an unterminated quote")
	}
	for _, s := range []string{"plain", "it's", "''", ""} {
		if got, err := psWords(psQuote(s)); err != nil || !reflect.DeepEqual(got, []string{s}) {
			t.Errorf("psWords(psQuote(%q)) = %q, %v", s, got, err)
		}
	}
}

func TestLogicalLines(t *testing.T) {
	got := logicalLines("a \\\nb\nc \\\\\nd\r\ne \\")
	want := []string{"a \\\nb", `c \\`, "d", "e \\"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("logicalLines = %q, want %q", got, want)
	}
}

func TestApplyKubeletFlagForms(t *testing.T) {
	var b NodeBootstrap
	if err := applyKubeletFlags([]string{"ignored", "--max-pods", "12", "--cpu-cfs-quota", "--node-labels=a=b", "--node-labels=c=d", "--unknown=x"}, &b); err != nil {
		t.Fatal(err)
	}
	if b.MaxPods != 12 || b.Kubelet.CPUCFSQuota == nil || !*b.Kubelet.CPUCFSQuota || !reflect.DeepEqual(b.Labels, map[string]string{"c": "d"}) {
		t.Errorf("applyKubeletFlags = %+v, want max pods 12, cpu-cfs-quota on, the last --node-labels", b)
	}
	for _, bad := range [][]string{{"--node-labels=novalue"}, {"--register-with-taints=k=v"}, {"--eviction-soft-grace-period=memory.available=soon"}, {"--image-gc-high-threshold=high"}} {
		if err := applyKubeletFlags(bad, &NodeBootstrap{}); err == nil {
			t.Errorf("applyKubeletFlags(%q) should fail", bad)
		}
	}
}
