// Package kwok is a cloud provider whose "instances" are Nodes that kwok simulates: Create
// writes a Node annotated kwok.x-k8s.io/node=fake, which kwok then keeps Ready, and Delete
// deletes it. Instance types come from an embedded catalog of EC2-like types (see catalog/),
// replaceable with a file. NodePools use it through a karpenter.kwok.sh/v1alpha1 KWOKNodeClass,
// as with Karpenter's kwok provider.
//
// Conventions:
//   - a Node is named after its NodeClaim, and its provider ID is kwok://<node name>;
//   - zones are test-zone-a to test-zone-d, the names Karpenter's kwok provider uses;
//   - the image ID is kwok-<os>-<arch>, since kwok nodes run no image.
package kwok
