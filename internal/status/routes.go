package status

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// securityHeaders go on every answer: no script but the page's own file, no
// framing, no guessing of content types, no referrer to elsewhere.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Frame-Options":        "DENY",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"Cache-Control":          "no-store",
}

// routes are GET (and so HEAD) only; any other method is refused with 405
// before a route is looked up, whatever the path.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /queue", s.queuePage)
	mux.HandleFunc("GET /passes", s.passesPage)
	mux.HandleFunc("GET /owners", s.ownersPage)
	mux.HandleFunc("GET /holdings", s.holdingsPage)
	mux.HandleFunc("GET /tasks/{ref...}", s.taskPage)
	mux.HandleFunc("GET /tasks", s.taskPage)
	mux.HandleFunc("GET /lost-tasks", s.lostTasksPage)
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusNotFound, "notfound", page{Title: "Not found"})
	})
	return readOnly(mux)
}

// readOnly sets the security headers and refuses every method but GET and
// HEAD with 405: nothing here changes state, so no other method has a use.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte("405 method not allowed: the status page is read-only\n"))
			return
		}
		if strings.Contains(r.URL.Path, "..") {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
