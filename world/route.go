package world

import "fmt"

// ServiceHost returns the proxy host name that reaches service: where
// `git binky curl` and the MCP curl tool send a request for it.
func (w *World) ServiceHost(service string) (string, error) {
	if _, ok := w.Config.Services[service]; !ok {
		return "", fmt.Errorf("%s has no service %q (its services: %v)", w.Name, service, w.Config.ServiceNames())
	}
	h, ok := w.Hosts()[service]
	if !ok {
		return "", fmt.Errorf("service %q of %s has no url, so the proxy does not route it (give it url = \"...\")", service, w.Name)
	}
	return h, nil
}
