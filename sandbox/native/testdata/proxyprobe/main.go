// Command proxyprobe is the network probe of the proxy mode's tests. The
// tests build it statically (CGO_ENABLED=0) and run it inside and outside
// the sandbox. Each mode makes one real attempt and prints one line:
// exit 0 when it got there, 1 with "denied: ..." when it did not.
//
//	proxyprobe get URL     GET through the proxy of the environment; prints "status N" and the body
//	proxyprobe tcp ADDR    connect to ADDR, directly
//	proxyprobe bind ADDR   listen on ADDR
//	proxyprobe udp ADDR    send a datagram to ADDR
//	proxyprobe raw         open an AF_INET raw socket
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// timeout bounds every attempt, well within the tests' wall limits.
const timeout = 5 * time.Second

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "get":
		need(3)
		err = get(os.Args[2])
	case "tcp":
		need(3)
		var c net.Conn
		if c, err = net.DialTimeout("tcp", os.Args[2], timeout); err == nil {
			c.Close()
			fmt.Println("connected", os.Args[2])
		}
	case "bind":
		need(3)
		var l net.Listener
		if l, err = net.Listen("tcp", os.Args[2]); err == nil {
			l.Close()
			fmt.Println("listening on", os.Args[2])
		}
	case "udp":
		need(3)
		var c net.Conn
		if c, err = net.DialTimeout("udp", os.Args[2], timeout); err == nil {
			_, err = c.Write([]byte("probe"))
			c.Close()
			if err == nil {
				fmt.Println("sent", os.Args[2])
			}
		}
	case "raw":
		var fd int
		if fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP); err == nil {
			syscall.Close(fd)
			fmt.Println("opened a raw socket")
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Println("denied:", err)
		os.Exit(1)
	}
}

func get(url string) error {
	// The default transport reads HTTP_PROXY and HTTPS_PROXY.
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	fmt.Printf("status %d %s\n%s\n", resp.StatusCode, resp.Header.Get("X-Airlock-Error"), body)
	return nil
}

func need(n int) {
	if len(os.Args) < n {
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: proxyprobe get URL | tcp ADDR | bind ADDR | udp ADDR | raw")
	os.Exit(2)
}
