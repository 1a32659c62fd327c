package snapshot_test

import (
	"bytes"
	"reflect"
	"regexp"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/cli/snapshot"
)

// keptContainerFields are the container fields, by Go path, a snapshot keeps a string of:
// what scheduling reads (name, image, ports, volumes, restart policy, resources) and
// nothing that runs or authenticates. A field Kubernetes adds fails
// TestSanitizeEveryContainerField until it is judged here or dropped by Sanitize.
var keptContainerFields = []string{
	"Name", "Image", "WorkingDir", "ImagePullPolicy", "TerminationMessagePath", "TerminationMessagePolicy",
	"Env.Name", "RestartPolicy",
	"RestartPolicyRules.Action", "RestartPolicyRules.ExitCodes.Operator",
	"Ports.Name", "Ports.Protocol", "Ports.HostIP",
	"VolumeMounts.Name", "VolumeMounts.MountPath", "VolumeMounts.SubPath", "VolumeMounts.SubPathExpr", "VolumeMounts.MountPropagation", "VolumeMounts.RecursiveReadOnly",
	"VolumeDevices.Name", "VolumeDevices.DevicePath",
	"ResizePolicy.ResourceName", "ResizePolicy.RestartPolicy",
	"Resources.Claims.Name", "Resources.Claims.Request",
	"SecurityContext.ProcMount", "SecurityContext.SELinuxOptions.User", "SecurityContext.SELinuxOptions.Role",
	"SecurityContext.SELinuxOptions.Type", "SecurityContext.SELinuxOptions.Level",
	"SecurityContext.Capabilities.Add", "SecurityContext.Capabilities.Drop",
	"SecurityContext.SeccompProfile.Type", "SecurityContext.SeccompProfile.LocalhostProfile",
	"SecurityContext.AppArmorProfile.Type", "SecurityContext.AppArmorProfile.LocalhostProfile",
	"SecurityContext.WindowsOptions.GMSACredentialSpecName", "SecurityContext.WindowsOptions.RunAsUserName",
}

// TestSanitizeEveryContainerField fills every string of every container field (commands,
// args, env values and references, probes' exec commands and HTTP headers, lifecycle hooks,
// the GMSA credential spec, whatever Kubernetes adds) with a marker naming its field, in a
// pod's containers, init and ephemeral containers and a DaemonSet's template, and checks that
// the encoded snapshot keeps only the markers of keptContainerFields.
func TestSanitizeEveryContainerField(t *testing.T) {
	var c corev1.Container
	fill(reflect.ValueOf(&c).Elem(), "")
	var e corev1.EphemeralContainer
	fill(reflect.ValueOf(&e.EphemeralContainerCommon).Elem(), "")
	pod := corev1.Pod{Spec: corev1.PodSpec{
		Containers:          []corev1.Container{*c.DeepCopy()},
		InitContainers:      []corev1.Container{*c.DeepCopy()},
		EphemeralContainers: []corev1.EphemeralContainer{e},
	}}
	ds := appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: *pod.Spec.DeepCopy()}}}
	s := &snapshot.Snapshot{Pods: []corev1.Pod{pod}, DaemonSets: []appsv1.DaemonSet{ds}}
	s.Sanitize()
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`FIELD:([A-Za-z.]*):END`).FindAllStringSubmatch(buf.String(), -1) {
		if !slices.Contains(keptContainerFields, m[1]) {
			t.Errorf("the snapshot keeps container field %s", m[1])
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte("FIELD:Name:END")) {
		t.Error("the snapshot lost the containers' names: the fill did not reach the encoding")
	}
}

// fill sets every settable string under v to a marker naming its Go field path, allocating
// pointers and one element of each slice; maps and types with unexported fields (quantities)
// are left alone.
func fill(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("FIELD:" + path + ":END")
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), path)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || !v.Field(i).CanSet() {
				return
			}
		}
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if path != "" {
				name = path + "." + name
			}
			fill(v.Field(i), name)
		}
	}
}
