package main

import "fmt"

// warnProxyDown says, on stderr, that the daemon's URL proxy is not
// listening and why: up, status and env would otherwise be silent while
// URLs on its port reach whatever program holds it. (Worlds' URLs are
// their direct ones meanwhile: world.Home.ProxyDown.)
func warnProxyDown(app *App) {
	home, err := app.Home()
	if err != nil {
		return
	}
	if why := home.ProxyDown(); why != "" {
		fmt.Fprintf(app.Err, "warning: the URL proxy is down: %s\n  until it is back, each service's URL is its direct one (http://127.0.0.1:PORT); 'git binky doctor' checks it again\n", why)
	}
}
