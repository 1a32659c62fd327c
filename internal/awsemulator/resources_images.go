package awsemulator

import (
	"fmt"
	"time"
)

// Owners of the AWS-published images. EKS-optimized Amazon Linux AMIs are published by the EKS
// account, Windows AMIs by the Windows account; both carry the "amazon" owner alias, which is
// what selectors match on. (The Bottlerocket account id is illustrative.)
const (
	eksAMIOwner          = "602401143452"
	bottlerocketAMIOwner = "092701018921"
	windowsAMIOwner      = "801119661308"
	amazonOwnerAlias     = "amazon"
)

// amiDeprecationAge is how long after creation AWS deprecates EKS-optimized AMIs.
const amiDeprecationAge = 2 * 365 * 24 * time.Hour

// kubernetesRelease is a Kubernetes minor version and when EKS started supporting it. AMIs are
// published for a version from then until its extended support ends (26 months).
type kubernetesRelease struct {
	version  string
	launched time.Time
}

const eksSupportWindow = 26 * 30 * 24 * time.Hour

var kubernetesReleases = []kubernetesRelease{
	{"1.29", day(2024, 1, 23)},
	{"1.30", day(2024, 5, 23)},
	{"1.31", day(2024, 9, 26)},
	{"1.32", day(2025, 1, 23)},
	{"1.33", day(2025, 5, 29)},
	{"1.34", day(2025, 10, 2)},
	{"1.35", day(2026, 1, 27)},
	{"1.36", day(2026, 6, 10)},
}

// KubernetesVersions returns the Kubernetes minor versions the emulator publishes AMIs for.
func KubernetesVersions() []string {
	out := make([]string, 0, len(kubernetesReleases))
	for _, r := range kubernetesReleases {
		out = append(out, r.version)
	}
	return out
}

// amazonLinuxReleases are the release tags of the EKS-optimized Amazon Linux AMIs (the GitHub
// release tags of awslabs/amazon-eks-ami, vYYYYMMDD) and their dates.
var amazonLinuxReleases = []string{
	"v20240703", "v20240807", "v20250115", "v20250519", "v20250715", "v20251023", "v20260311", "v20261112",
}

// al2LastRelease is the end of EKS-optimized AL2 AMIs: none are published after it, and none
// for Kubernetes 1.33 or later.
var al2LastRelease = day(2025, 11, 26)

const al2LastKubernetesVersion = "1.32"

// bottlerocketReleases are Bottlerocket versions (GitHub tags without the leading v), the date
// each was published and the build's commit prefix that AMI names carry.
var bottlerocketReleases = []struct {
	version string
	date    time.Time
	commit  string
}{
	{"1.20.4", day(2024, 7, 9), "7c3e9198"},
	{"1.21.1", day(2024, 8, 13), "82fe3d2a"},
	{"1.30.0", day(2025, 1, 14), "b6163b2a"},
	{"1.39.1", day(2025, 5, 20), "5aa3c0e5"},
	{"1.42.0", day(2025, 7, 17), "d0c4b7f1"},
	{"1.49.0", day(2025, 10, 22), "9e1f6a03"},
	{"1.55.0", day(2026, 3, 10), "34b8e2c7"},
	{"1.62.0", day(2026, 11, 10), "a1d5f9e8"},
}

// minorVersion returns the minor number of a "1.N" version.
func minorVersion(v string) int {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		panic(fmt.Sprintf("awsemulator: bad Kubernetes version %q", v))
	}
	return minor
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// releaseDate parses an Amazon Linux release tag.
func releaseDate(tag string) time.Time {
	t, err := time.Parse("v20060102", tag)
	if err != nil {
		panic(fmt.Sprintf("awsemulator: bad release tag %q", tag))
	}
	return t
}

// supports reports whether EKS published AMIs for k on date.
func (k kubernetesRelease) supports(date time.Time) bool {
	return !date.Before(k.launched) && date.Before(k.launched.Add(eksSupportWindow))
}

// seedEKSImages adds the EKS-optimized AMIs of every family, Kubernetes version, architecture
// and variant, with the public SSM parameters AWS publishes for them: versioned ones and the
// recommended/latest ones pointing at the newest release.
func (r *resourceState) seedEKSImages() {
	for _, k := range kubernetesReleases {
		r.seedAL2023(k)
		if minorVersion(k.version) <= minorVersion(al2LastKubernetesVersion) {
			r.seedAL2(k)
		}
		r.seedBottlerocket(k)
		r.seedWindows(k, "2019")
		r.seedWindows(k, "2022")
		r.seedWindows(k, "2025")
	}
}

// addPublicImage adds an AWS-published image and the parameters naming it. The parameter
// named latestParameter is (re)pointed at it, so calling in release order leaves it on the
// newest.
func (r *resourceState) addPublicImage(img Image, versionedParameter, latestParameter string) {
	img.ID = resourceID("ami", img.Name)
	img.OwnerAlias = amazonOwnerAlias
	img.Public = true
	img.DeprecationTime = img.CreationDate.Add(amiDeprecationAge)
	img.SSMParameter = versionedParameter
	r.images[img.ID] = &img
	if versionedParameter != "" {
		r.putParameter(versionedParameter, img.ID, "aws:ec2:image", img.CreationDate)
	}
	if latestParameter != "" {
		r.putParameter(latestParameter, img.ID, "aws:ec2:image", img.CreationDate)
	}
}

func (r *resourceState) seedAL2023(k kubernetesRelease) {
	variants := []struct{ arch, variant string }{
		{"x86_64", "standard"}, {"arm64", "standard"},
		{"x86_64", "nvidia"}, {"arm64", "nvidia"},
		{"x86_64", "neuron"},
	}
	for _, tag := range amazonLinuxReleases {
		created := releaseDate(tag)
		if !k.supports(created) {
			continue
		}
		for _, v := range variants {
			name := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.arch, v.variant, k.version, tag)
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s", k.version, v.arch, v.variant)
			r.addPublicImage(Image{
				Name:         name,
				Description:  fmt.Sprintf("EKS-optimized Kubernetes node based on Amazon Linux 2023, (k8s: %s, variant: %s)", k.version, v.variant),
				OwnerID:      eksAMIOwner,
				Architecture: v.arch,
				CreationDate: created,
			}, base+"/"+name+"/image_id", base+"/recommended/image_id")
		}
	}
}

func (r *resourceState) seedAL2(k kubernetesRelease) {
	variants := []struct{ dir, arch, prefix string }{
		{"amazon-linux-2", "x86_64", "amazon-eks-node"},
		{"amazon-linux-2-arm64", "arm64", "amazon-eks-arm64-node"},
		{"amazon-linux-2-gpu", "x86_64", "amazon-eks-gpu-node"},
	}
	for _, tag := range amazonLinuxReleases {
		created := releaseDate(tag)
		if !k.supports(created) || created.After(al2LastRelease) {
			continue
		}
		for _, v := range variants {
			name := fmt.Sprintf("%s-%s-%s", v.prefix, k.version, tag)
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s", k.version, v.dir)
			r.addPublicImage(Image{
				Name:         name,
				Description:  fmt.Sprintf("EKS Kubernetes Worker AMI with AmazonLinux2 image, (k8s: %s)", k.version),
				OwnerID:      eksAMIOwner,
				Architecture: v.arch,
				CreationDate: created,
			}, base+"/"+name+"/image_id", base+"/recommended/image_id")
		}
	}
}

func (r *resourceState) seedBottlerocket(k kubernetesRelease) {
	for _, rel := range bottlerocketReleases {
		if !k.supports(rel.date) {
			continue
		}
		for _, flavour := range []string{"", "-nvidia"} {
			for _, arch := range []string{"x86_64", "arm64"} {
				variant := "aws-k8s-" + k.version + flavour
				name := fmt.Sprintf("bottlerocket-%s-%s-v%s-%s", variant, arch, rel.version, rel.commit)
				base := fmt.Sprintf("/aws/service/bottlerocket/%s/%s", variant, arch)
				r.addPublicImage(Image{
					Name:         name,
					Description:  fmt.Sprintf("bottlerocket-%s-%s-v%s", variant, arch, rel.version),
					OwnerID:      bottlerocketAMIOwner,
					Architecture: arch,
					CreationDate: rel.date,
				}, base+"/"+rel.version+"/image_id", base+"/latest/image_id")
			}
		}
	}
}

// seedWindows adds the EKS-optimized Windows Server Core AMIs. AWS publishes only a "latest"
// parameter for them, which is why Windows aliases cannot be pinned.
func (r *resourceState) seedWindows(k kubernetesRelease, server string) {
	for _, tag := range amazonLinuxReleases {
		created := releaseDate(tag)
		if !k.supports(created) {
			continue
		}
		family := fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s", server, k.version)
		r.addPublicImage(Image{
			Name:         family + "-" + created.Format("2006.01.02"),
			Description:  fmt.Sprintf("Microsoft Windows Server %s Core optimized for EKS and Kubernetes %s", server, k.version),
			OwnerID:      windowsAMIOwner,
			Architecture: "x86_64",
			Platform:     "windows",
			CreationDate: created,
		}, "", "/aws/service/ami-windows-latest/"+family+"/image_id")
	}
}
