package worker

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/sandbox"
)

// gatherScript reports the state of files below a directory, in one command. Its arguments
// are the directory, then (cap, path) pairs: the paths are arguments, never part of the script,
// so no name is ever parsed by the shell. Symbolic links are resolved with realpath and a path
// that resolves outside the directory is refused (X), never read, so a link cannot make the
// worker read, or vouch for the absence of, anything else. A missing path is reported missing
// (M) only when the nearest existing directory above it can be searched: otherwise its state
// is unknown (U), so a negative check is errored, never passed.
//
// Output, per path i: "M i", "D i" (directory), "S i" (device, pipe, socket), "X i",
// "U i why", or "F i size n" followed by exactly n bytes of content (zero-padded should the
// read come up short), a newline and "C i count", count being what a second read of the file
// gave: n when the content is whole. "B why" first and nothing else: the directory itself
// cannot be resolved.
const gatherScript = `export LC_ALL=C
base=$(realpath -e -- "$1" 2>/dev/null) || { echo "B the directory cannot be resolved"; exit 0; }
shift
i=0
while [ "$#" -gt 1 ]; do
  cap=$1 p=$2
  shift 2
  f="$base/$p"
  r=$(realpath -m -- "$f" 2>/dev/null)
  if [ -z "$r" ]; then echo "U $i the path cannot be resolved"
  elif [ "$r" != "$base" ] && [ "${r#"$base"/}" = "$r" ]; then echo "X $i"
  elif [ -L "$f" ] && [ ! -e "$f" ]; then echo "U $i a symbolic link that leads nowhere"
  elif [ -d "$r" ]; then echo "D $i"
  elif [ -f "$r" ]; then
    if ! { : <"$r"; } 2>/dev/null; then echo "U $i the file cannot be read"
    elif ! size=$(stat -c %s -- "$r" 2>/dev/null); then echo "U $i the file's size cannot be read"
    else
      n=$size
      [ "$n" -gt "$cap" ] && n=$cap
      printf 'F %d %d %d\n' "$i" "$size" "$n"
      { head -c "$n" -- "$r" 2>/dev/null; head -c "$n" /dev/zero; } | head -c "$n"
      c=$(head -c "$n" -- "$r" 2>/dev/null | wc -c)
      printf '\nC %d %d\n' "$i" "$c"
    fi
  elif [ -e "$r" ]; then echo "S $i"
  else
    d=$(dirname -- "$r")
    while [ "$d" != "$base" ] && [ ! -e "$d" ]; do d=$(dirname -- "$d"); done
    if [ -d "$d" ] && { [ ! -x "$d" ] || [ ! -r "$d" ]; }; then echo "U $i the directory $d cannot be searched"
    else echo "M $i"
    fi
  fi
  i=$((i+1))
done`

// gatherTimeout bounds the gathering command: it reads at most a few MiB from a tmpfs.
const gatherTimeout = 30 * time.Second

// fileRequest is one path to gather and the most bytes of it to read.
type fileRequest struct {
	path string
	cap  int64
}

// gatherCommand is the argv that gathers reqs below dir.
func gatherCommand(dir string, reqs []fileRequest) []string {
	args := []string{"bash", "-c", gatherScript, "gather", dir}
	for _, r := range reqs {
		args = append(args, strconv.FormatInt(r.cap, 10), r.path)
	}
	return args
}

// gatherFiles gathers the state of reqs below dir in sb, keyed by path. A path the command did
// not report (it failed, it was cut by the output cap) is FileUnknown with the reason: the
// assertions on it are errored. An error is an infrastructure failure.
func gatherFiles(ctx context.Context, sb Sandbox, dir string, reqs []fileRequest) (map[string]assert.File, error) {
	out := make(map[string]assert.File, len(reqs))
	if len(reqs) == 0 {
		return out, nil
	}
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: gatherCommand(dir, reqs), WorkDir: "/", Timeout: gatherTimeout})
	if err != nil {
		return nil, fmt.Errorf("gathering files: %w", err)
	}
	why := ""
	switch {
	case res.TimedOut:
		why = "gathering the files timed out"
	case res.SandboxExited:
		why = "the sandbox stopped while the files were gathered"
	case res.ExitCode != 0:
		msg, _ := trimText(string(res.Stderr), 200)
		why = fmt.Sprintf("gathering the files failed (exit %d): %s", res.ExitCode, msg)
	}
	if why == "" {
		parseGathered(res.Stdout, res.StdoutTruncated, reqs, out)
		why = "the state of the files was cut by the sandbox's output cap"
	}
	for _, r := range reqs {
		if _, ok := out[r.path]; !ok {
			out[r.path] = assert.File{State: assert.FileUnknown, Problem: why}
		}
	}
	return out, nil
}

// parseGathered reads gatherScript's output into out. When the output was cut (truncated), the
// last lines are the sandbox's marker: whatever follows the last complete record is left out,
// and a file whose content was cut keeps the part that arrived, marked Truncated.
func parseGathered(data []byte, truncated bool, reqs []fileRequest, out map[string]assert.File) {
	if truncated {
		// The marker is a line of its own at the end, after a newline the sandbox may have
		// added: drop both, and one more byte, which may be that added newline.
		if i := bytes.LastIndex(data, []byte("\n[skillfleet: output truncated at ")); i >= 0 {
			data = data[:i]
		} else if bytes.HasPrefix(data, []byte("[skillfleet: output truncated at ")) {
			data = nil
		}
	}
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return
		}
		fields := strings.SplitN(string(data[:nl]), " ", 3)
		data = data[nl+1:]
		if fields[0] == "B" {
			why := "the directory cannot be resolved"
			for _, r := range reqs {
				out[r.path] = assert.File{State: assert.FileUnknown, Problem: why}
			}
			return
		}
		if len(fields) < 2 {
			return
		}
		i, err := strconv.Atoi(fields[1])
		if err != nil || i < 0 || i >= len(reqs) {
			return
		}
		p := reqs[i].path
		switch fields[0] {
		case "M":
			out[p] = assert.File{State: assert.FileMissing}
		case "D":
			out[p] = assert.File{State: assert.FileDirectory}
		case "S":
			out[p] = assert.File{State: assert.FileOther}
		case "X":
			out[p] = assert.File{State: assert.FileUnknown, Problem: "a symbolic link leads out of the directory; it was not followed"}
		case "U":
			why := "unknown"
			if len(fields) == 3 {
				why = fields[2]
			}
			out[p] = assert.File{State: assert.FileUnknown, Problem: why}
		case "F":
			var rest []byte
			var ok bool
			if rest, ok = parseContent(fields, data, truncated, reqs[i], out); !ok {
				return
			}
			data = rest
		default:
			return
		}
	}
}

// parseContent reads an "F i size n" record's content and its "C i count" line; it reports
// false when the output ends inside the record.
func parseContent(fields []string, data []byte, truncated bool, req fileRequest, out map[string]assert.File) ([]byte, bool) {
	if len(fields) != 3 {
		return nil, false
	}
	sn := strings.SplitN(fields[2], " ", 2)
	if len(sn) != 2 {
		return nil, false
	}
	size, err1 := strconv.ParseInt(sn[0], 10, 64)
	n, err2 := strconv.ParseInt(sn[1], 10, 64)
	if err1 != nil || err2 != nil || n < 0 || n > req.cap || n > size {
		return nil, false
	}
	if int64(len(data)) < n+1 {
		if truncated && len(data) > 0 {
			// Cut by the output cap: the part that arrived is the file's first bytes, bar the
			// last one, which may be the newline the sandbox added before its marker.
			out[req.path] = assert.File{State: assert.FileRegular, Size: size, Content: bytes.Clone(data[:len(data)-1]), Truncated: true}
		}
		return nil, false
	}
	content := data[:n]
	data = data[n+1:] // the content and the newline after it
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		if truncated {
			out[req.path] = assert.File{State: assert.FileRegular, Size: size, Content: bytes.Clone(content), Truncated: n < size}
		}
		return nil, false
	}
	check := strings.Fields(string(data[:nl]))
	data = data[nl+1:]
	if len(check) != 3 || check[0] != "C" || check[2] != strconv.FormatInt(n, 10) {
		out[req.path] = assert.File{State: assert.FileUnknown, Problem: "the file could not be read in full"}
		return data, true
	}
	out[req.path] = assert.File{State: assert.FileRegular, Size: size, Content: bytes.Clone(content), Truncated: n < size}
	return data, true
}

// fileRequests are the paths a job's file assertions name, once each, read up to
// assert.MaxFileReadBytes.
func fileRequests(as []assert.Assertion) []fileRequest {
	var reqs []fileRequest
	seen := map[string]bool{}
	for _, a := range as {
		if !a.Type.IsFile() || seen[a.Path] {
			continue
		}
		seen[a.Path] = true
		reqs = append(reqs, fileRequest{path: a.Path, cap: assert.MaxFileReadBytes})
	}
	return reqs
}

// observeFiles gathers the files the assertions name below dir, for the Observation: nil when
// they name none.
func observeFiles(ctx context.Context, sb Sandbox, dir string, as []assert.Assertion) (map[string]assert.File, error) {
	reqs := fileRequests(as)
	if len(reqs) == 0 {
		return nil, nil
	}
	// Compile cleaned the paths and refused those outside; a job is still not trusted.
	local := reqs[:0]
	bad := map[string]assert.File{}
	for _, r := range reqs {
		if localPath(r.path) {
			local = append(local, r)
		} else {
			bad[r.path] = assert.File{State: assert.FileUnknown, Problem: "the path is not inside " + path.Clean(dir)}
		}
	}
	files, err := gatherFiles(ctx, sb, dir, local)
	if err != nil {
		return nil, err
	}
	for p, f := range bad {
		files[p] = f
	}
	return files, nil
}
