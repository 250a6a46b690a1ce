package devstack

import (
	"context"
	"fmt"
	"os/exec"
)

// chromiumNames are the program names Debian, Ubuntu and upstream builds use.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findChromium returns the path of an installed Chromium ("" if none).
func findChromium() string {
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/lib/chromium/chromium"} {
		if exists(p) {
			return p
		}
	}
	return ""
}

// EnsureChromium returns the path of a Chromium browser for the browser
// tests, installing Debian's chromium package with apt-get when it is missing
// and opts.AllowInstall permits (root on Debian or Ubuntu), like PostgreSQL
// and Redis. Only apt reaches the network; the browser itself is then run
// against loopback.
func EnsureChromium(ctx context.Context, opts Options) (string, error) {
	if p := findChromium(); p != "" {
		return p, nil
	}
	if !opts.AllowInstall {
		return "", fmt.Errorf("chromium: %w; install it with %s", ErrNotInstalled, installHint("chromium", "--cask chromium"))
	}
	log := logger{opts.Log}
	if err := aptInstall(ctx, log, func() bool { return findChromium() != "" }, "chromium"); err != nil {
		return "", fmt.Errorf("chromium: %w: %v; install it with %s", ErrNotInstalled, err, installHint("chromium", "--cask chromium"))
	}
	if p := findChromium(); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("chromium: %w after apt-get install", ErrNotInstalled)
}

// EnsureHeadlessShell returns the path of Chromium's headless shell, the
// browser without a window that Debian packages as chromium-headless-shell,
// installing it with apt-get when it is missing and opts.AllowInstall
// permits; where the package does not exist (Ubuntu), a full Chromium
// (EnsureChromium). The shell starts in a quarter of the CPU a full Chromium
// takes and draws pages for less: what the browser tests run on, except
// those that need the full browser (an installable app).
func EnsureHeadlessShell(ctx context.Context, opts Options) (string, error) {
	find := func() string {
		if p, err := exec.LookPath("chromium-headless-shell"); err == nil {
			return p
		}
		return ""
	}
	if p := find(); p != "" {
		return p, nil
	}
	if opts.AllowInstall {
		if err := aptInstall(ctx, logger{opts.Log}, func() bool { return find() != "" }, "chromium-headless-shell"); err == nil {
			if p := find(); p != "" {
				return p, nil
			}
		}
	}
	return EnsureChromium(ctx, opts)
}
