// Package integration runs the interruption controller in a controller-runtime manager against
// a real kube-apiserver (etcd and kube-apiserver from .local/bin, joinery's CRDs installed) and
// the AWS emulator (internal/awsemulator)'s SQS, through Setup as joinery-controller wires it.
package integration
