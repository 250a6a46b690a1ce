package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// runAs runs a program and returns its combined output. When as is not nil
// the program runs as that user (through runuser when present).
func runAs(ctx context.Context, as *sysUser, name string, args ...string) (string, error) {
	var cmd *exec.Cmd
	if as != nil && as.runuser != "" {
		cmd = exec.CommandContext(ctx, as.runuser, append([]string{"-u", as.name, "--", name}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if as != nil && as.runuser == "" {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid}
	}
	// A folder every user can enter: the caller's may be private (/root/...).
	cmd.Dir = "/"
	cmd.Env = childEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// Daemons (postgres, redis-server) must not keep our pipes open; if one
	// does anyway, do not wait for it.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	s := strings.TrimSpace(out.String())
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		if s != "" {
			return s, fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, s)
		}
		return s, fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return s, nil
}

// childEnv is the environment of server programs: PG* variables of the
// caller (PGPORT, PGDATA, ...) must not change what we start.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// sysUser is the user server programs run as when we are root.
type sysUser struct {
	name     string
	uid, gid uint32
	runuser  string // path of runuser, "" to set credentials directly
}

func lookupSysUser(name string) (*sysUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	su := &sysUser{name: name, uid: uint32(uid), gid: uint32(gid)}
	if p, err := exec.LookPath("runuser"); err == nil {
		su.runuser = p
	} else {
		for _, p := range []string{"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"} {
			if isExecutable(p) {
				su.runuser = p
				break
			}
		}
	}
	return su, nil
}

func (u *sysUser) chown(path string) error {
	if u == nil {
		return nil
	}
	return os.Lchown(path, int(u.uid), int(u.gid))
}

// canReach reports whether u can enter dir (search permission on dir and on
// every parent).
func (u *sysUser) canReach(ctx context.Context, dir string) bool {
	testProg, err := exec.LookPath("test")
	if err != nil {
		testProg = "/usr/bin/test"
	}
	_, err = runAs(ctx, u, testProg, "-x", dir)
	return err == nil
}

func isRoot() bool { return os.Geteuid() == 0 }

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// processAlive reports whether pid names a live (not zombie) process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) S ...: the state follows the last ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			return false
		}
	}
	return true
}

// processComm is the command name of pid, or "" when unknown (no /proc).
func processComm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// waitExit waits until pid is gone or the timeout passes.
func waitExit(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// awaitExit gives a server that may be shutting down a moment (at most
// grace) to exit, and reports whether it is still alive after it.
func awaitExit(ctx context.Context, pid int, grace time.Duration) (alive bool, err error) {
	deadline := time.Now().Add(grace)
	for processAlive(pid) && time.Now().Before(deadline) {
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return false, err
		}
	}
	return processAlive(pid), nil
}

// worksIn reports whether pid's working folder is dir; true when that
// cannot be told (no /proc).
func worksIn(pid int, dir string) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return true
	}
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		want = dir
	}
	return cwd == want
}

// readPidFile returns the number on the first line of a pid file.
func readPidFile(path string) (int, []string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, nil
	}
	lines := strings.Split(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	return pid, lines
}

// portOpen reports whether something accepts TCP connections on the
// loopback port.
func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// findInDirs returns the first folder of dirs that holds all the programs.
func findInDirs(dirs []string, programs ...string) string {
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		ok := true
		for _, p := range programs {
			if !isExecutable(filepath.Join(d, p)) {
				ok = false
				break
			}
		}
		if ok {
			return d
		}
	}
	return ""
}

func pathDirs() []string { return filepath.SplitList(os.Getenv("PATH")) }

// sleepCtx sleeps for d or until ctx ends, then ctx's error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if !ctxsleep.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}
