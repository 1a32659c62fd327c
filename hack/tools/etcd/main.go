// Command etcd is etcd's server built from the Go module that kube-apiserver is tested against
// (go.etcd.io/etcd/server/v3, pinned in go.mod), so the local cluster needs no download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
