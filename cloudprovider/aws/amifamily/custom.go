package amifamily

import "errors"

// ErrCustomUserData is returned by Parse for the Custom family, whose user data joinery neither
// writes nor understands.
var ErrCustomUserData = errors.New("the Custom AMI family's user data is opaque to joinery")

// custom passes spec.userData through unchanged. The image's own bootstrap must register the
// node with the karpenter.sh/unregistered:NoExecute taint and with the spec.kubelet settings.
type custom struct{}

func (custom) userData(in Input) ([]byte, error) { return []byte(in.UserData), nil }

func (custom) parse([]byte) (NodeBootstrap, error) { return NodeBootstrap{}, ErrCustomUserData }
