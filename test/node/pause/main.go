// Command pause is make test-node's pod sandbox image (containerd's
// "sandbox" image, which holds a pod's namespaces): it waits for SIGTERM or
// SIGINT and exits. Static, so hack/ocibuild packs it alone.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
