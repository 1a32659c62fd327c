package v1

import "strings"

// aliasFamilies maps the family part of an AMI alias to the amiFamily it implies.
var aliasFamilies = map[string]string{
	"al2":          AMIFamilyAL2,
	"al2023":       AMIFamilyAL2023,
	"bottlerocket": AMIFamilyBottlerocket,
	"windows2019":  AMIFamilyWindows2019,
	"windows2022":  AMIFamilyWindows2022,
	"windows2025":  AMIFamilyWindows2025,
}

// AMIAlias is a parsed amiSelectorTerms alias, family@version.
type AMIAlias struct {
	// Family is the amiFamily the alias implies, e.g. AL2023.
	Family string
	// Version is "latest" or a release tag such as v20240807.
	Version string
}

// Alias returns the class's alias term, if amiSelectorTerms uses one. The schema guarantees a
// well-formed alias on stored objects; a malformed one is reported as absent.
func (in *EC2NodeClass) Alias() (AMIAlias, bool) {
	for _, term := range in.Spec.AMISelectorTerms {
		if term.Alias == "" {
			continue
		}
		name, version, found := strings.Cut(term.Alias, "@")
		family, known := aliasFamilies[name]
		if !found || !known || version == "" {
			return AMIAlias{}, false
		}
		return AMIAlias{Family: family, Version: version}, true
	}
	return AMIAlias{}, false
}

// AMIFamily returns the family that decides user data and default block devices: the one an
// alias implies, otherwise spec.amiFamily.
func (in *EC2NodeClass) AMIFamily() string {
	if alias, ok := in.Alias(); ok {
		return alias.Family
	}
	if in.Spec.AMIFamily != nil {
		return *in.Spec.AMIFamily
	}
	return ""
}
