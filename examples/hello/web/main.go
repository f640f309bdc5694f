// Command web is the smallest frontend: it calls the api through API_URL,
// which binky injects before it starts.
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
)

func main() {
	port, api := os.Getenv("PORT"), os.Getenv("API_URL")
	if port == "" || api == "" {
		log.Fatal("PORT and API_URL are not set: run me with git binky up")
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(api + "/hello")
		if err != nil {
			http.Error(w, "api unreachable: "+err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		fmt.Fprintf(w, "web of %s says: ", os.Getenv("BINKY_WORKTREE"))
		io.Copy(w, resp.Body)
	})
	log.Printf("web listening on 127.0.0.1:%s, api at %s", port, api)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}
