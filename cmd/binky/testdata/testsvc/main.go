// Command testsvc is the service the end-to-end tests supervise: a small
// HTTP server on $PORT that can also fail at once or leave a grandchild.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"
)

func main() {
	exit := flag.Int("exit", -1, "exit at once with this code")
	grandchild := flag.String("grandchild", "", "start a sleeping grandchild and write its pid to this file")
	slow := flag.Duration("slow", 0, "wait this long before listening (a slow start)")
	flag.Parse()
	time.Sleep(*slow)
	if *exit >= 0 {
		fmt.Fprintln(os.Stderr, "testsvc: exiting with", *exit, "as asked")
		os.Exit(*exit)
	}
	if *grandchild != "" {
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			log.Fatal(err)
		}
		os.WriteFile(*grandchild, []byte(strconv.Itoa(c.Process.Pid)), 0o644)
	}
	port := os.Getenv("PORT")
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	http.HandleFunc("/unhealthy", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "never healthy", http.StatusServiceUnavailable)
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s of %s, api at %s\n", os.Getenv("SERVICE"), os.Getenv("BINKY_WORKTREE"), os.Getenv("API_URL"))
	})
	log.Printf("listening on 127.0.0.1:%s", port)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}
