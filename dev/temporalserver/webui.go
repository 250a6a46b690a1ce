package temporalserver

import "net"

// WebUI is a Temporal Web UI served on its own, against a frontend this
// process did not start (a test's server, another namespace of it).
type WebUI struct{ ui *uiServer }

// StartWebUI serves the embedded Web UI on ln, exactly as Start serves it.
// It closes ln if it fails; Stop shuts it down.
func StartWebUI(ln net.Listener, cfg UIConfig) (*WebUI, error) {
	ui, err := startUI(ln, cfg)
	if err != nil {
		return nil, err
	}
	return &WebUI{ui: ui}, nil
}

// URL is the UI's base URL, e.g. http://127.0.0.1:8233.
func (w *WebUI) URL() string { return w.ui.URL() }

// Stop shuts the UI down and releases its listener.
func (w *WebUI) Stop() error { return w.ui.stop() }
