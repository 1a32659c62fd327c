// Package kwok is a cloud provider whose "instances" are Nodes that kwok simulates: Create
// writes a Node annotated kwok.x-k8s.io/node=fake, which kwok then keeps Ready, and Delete
// deletes it. Instance types come from an embedded catalog of EC2-like types (see catalog/),
// replaceable with a file. NodePools use it through a karpenter.kwok.sh/v1alpha1 KWOKNodeClass,
// as with Karpenter's kwok provider.
//
// It is built as docs/architecture.md's "What a provider implements" describes, and is the
// reference the neutral packages' tests run on: its API is apis/kwok/v1alpha1 (KWOKNodeClass,
// Ready by default), GetSupportedNodeClasses returns a KWOKNodeClass, the catalog registers the
// well-known labels of its EC2-like types at init (catalog/wellknown.go), it has no controllers
// of its own, and New is the one constructor both binaries call.
//
// Conventions:
//   - a Node is named after its NodeClaim, and its provider ID is kwok://<node name>;
//   - zones are test-zone-a to test-zone-d, the names Karpenter's kwok provider uses;
//   - the image ID is kwok-<os>-<arch>, since kwok nodes run no image.
package kwok
