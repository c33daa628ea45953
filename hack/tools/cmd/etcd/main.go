// Command etcd is etcd's own server entry point, built here from the module
// proxy so that envtest needs no prebuilt download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
