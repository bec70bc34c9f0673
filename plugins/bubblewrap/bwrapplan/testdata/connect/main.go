// Command connect tries each address it is given (unix:/path,
// abstract:name, tcp:host:port) and prints "<address> ok" or the error
// number's text, one line each. The socket tests run it in the sandbox.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

func main() {
	for _, a := range os.Args[1:] {
		kind, addr, _ := strings.Cut(a, ":")
		network := kind
		switch kind {
		case "abstract":
			network, addr = "unix", "@"+addr
		}
		c, err := net.DialTimeout(network, addr, 2*time.Second)
		if err == nil {
			c.Close()
			fmt.Println(a, "ok")
			continue
		}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Println(a, errno.Error())
		} else {
			fmt.Println(a, err)
		}
	}
}
