package v1

import "testing"

func TestAMIFamily(t *testing.T) {
	al2 := AMIFamilyAL2
	cases := []struct {
		name        string
		terms       []AMISelectorTerm
		amiFamily   *string
		wantFamily  string
		wantVersion string
		wantAlias   bool
	}{
		{name: "alias implies family", terms: []AMISelectorTerm{{Alias: "al2023@latest"}}, wantFamily: AMIFamilyAL2023, wantVersion: "latest", wantAlias: true},
		{name: "alias wins over amiFamily", terms: []AMISelectorTerm{{Alias: "bottlerocket@v1.20.4"}}, amiFamily: &al2, wantFamily: AMIFamilyBottlerocket, wantVersion: "v1.20.4", wantAlias: true},
		{name: "windows alias", terms: []AMISelectorTerm{{Alias: "windows2022@latest"}}, wantFamily: AMIFamilyWindows2022, wantVersion: "latest", wantAlias: true},
		{name: "no alias uses amiFamily", terms: []AMISelectorTerm{{ID: "ami-123"}}, amiFamily: &al2, wantFamily: AMIFamilyAL2},
		{name: "unknown alias family is no alias", terms: []AMISelectorTerm{{Alias: "ubuntu@latest"}}, amiFamily: &al2, wantFamily: AMIFamilyAL2},
		{name: "alias without version is no alias", terms: []AMISelectorTerm{{Alias: "al2@"}}, wantFamily: ""},
		{name: "nothing set", terms: []AMISelectorTerm{{Name: "my-ami"}}, wantFamily: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := &EC2NodeClass{Spec: EC2NodeClassSpec{AMISelectorTerms: tc.terms, AMIFamily: tc.amiFamily}}
			if got := nc.AMIFamily(); got != tc.wantFamily {
				t.Errorf("AMIFamily() = %q, want %q", got, tc.wantFamily)
			}
			alias, ok := nc.Alias()
			if ok != tc.wantAlias {
				t.Fatalf("Alias() ok = %v, want %v", ok, tc.wantAlias)
			}
			if ok && alias.Version != tc.wantVersion {
				t.Errorf("Alias().Version = %q, want %q", alias.Version, tc.wantVersion)
			}
		})
	}
}
