package worker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// Caps on the files kept from a prompt job's work directory: they travel in the result
// message and are stored with it for months.
const (
	maxOutputFiles     = 100
	maxOutputBytes     = 1 << 20
	maxOutputFileBytes = 256 << 10
	// maxOmittedNames bounds the paths named in one outputs_omitted line.
	maxOmittedNames = 10
)

// listCommand lists the regular files below the work directory, one "size mtime path" record
// each, NUL-terminated since a name may hold a newline. Symbolic links are not followed nor
// listed (-P is find's default), and -xdev stays on the work directory's tmpfs.
func listCommand(dir string) []string {
	return []string{"find", dir, "-xdev", "-type", "f", "-printf", `%s %T@ %P\0`}
}

// workFile is a listed file: its size and modification time as find prints them.
type workFile struct {
	size  int64
	stamp string
}

// listing is the work directory's regular files by path; nil when it could not be listed.
type listing map[string]workFile

// listWork lists dir's regular files. why is set when the listing is not to be trusted.
func listWork(ctx context.Context, sb Sandbox, dir string) (listing, string, error) {
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: listCommand(dir), WorkDir: "/", Timeout: gatherTimeout})
	if err != nil {
		return nil, "", err
	}
	switch {
	case res.TimedOut:
		return nil, "the work directory could not be listed: the sandbox was killed", nil
	case res.SandboxExited:
		return nil, "the work directory could not be listed: the sandbox stopped", nil
	case res.ExitCode != 0:
		msg, _ := trimText(string(res.Stderr), 200)
		return nil, fmt.Sprintf("the work directory could not be listed (exit %d): %s", res.ExitCode, msg), nil
	case res.StdoutTruncated:
		return nil, "the work directory holds more files than its listing could show", nil
	}
	l := listing{}
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		f := strings.SplitN(string(rec), " ", 3)
		if len(f) != 3 || f[2] == "" {
			continue
		}
		size, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		l[f[2]] = workFile{size: size, stamp: f[1]}
	}
	return l, "", nil
}

// snapshotWork is the work directory before the agent starts: empty without input files or
// placed skills (a job's work directory starts empty), else what was copied and placed there,
// with sizes and times.
func snapshotWork(ctx context.Context, sb Sandbox, job *pb.Job, placed bool) (listing, string, error) {
	if len(job.GetFiles()) == 0 && !placed {
		return listing{}, "", nil
	}
	return listWork(ctx, sb, AgentWorkDir)
}

// collectOutputs keeps the files the agent created or changed (new, or of another size or
// time than before it started), sorted by path, within the caps; omitted says, one line per
// reason, which were left out and why. It never fails the job: an infrastructure error is
// reported in omitted.
func collectOutputs(ctx context.Context, sb Sandbox, before listing, beforeWhy string) (kept []*pb.OutputFile, omitted []string) {
	if before == nil {
		return nil, []string{"outputs not kept: " + beforeWhy}
	}
	after, why, err := listWork(ctx, sb, AgentWorkDir)
	if err != nil {
		return nil, []string{"outputs not kept: " + err.Error()}
	}
	if after == nil {
		return nil, []string{"outputs not kept: " + why}
	}
	var changed []string
	for p, f := range after {
		if b, ok := before[p]; !ok || b != f {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	if len(changed) > maxOutputFiles {
		omitted = append(omitted, omittedLine(changed[maxOutputFiles:], fmt.Sprintf("more than %d files were created or changed (the first %d by path are kept)", maxOutputFiles, maxOutputFiles)))
		changed = changed[:maxOutputFiles]
	}
	budget := int64(maxOutputBytes)
	var reqs []fileRequest
	var overBudget []string
	for _, p := range changed {
		size := after[p].size
		want := min(size, maxOutputFileBytes)
		if want > budget {
			overBudget = append(overBudget, p)
			continue
		}
		budget -= want
		reqs = append(reqs, fileRequest{path: p, cap: want})
	}
	if len(overBudget) > 0 {
		omitted = append(omitted, omittedLine(overBudget, fmt.Sprintf("the %d KiB kept of all files was used", maxOutputBytes>>10)))
	}
	files, err := gatherFiles(ctx, sb, AgentWorkDir, reqs)
	if err != nil {
		return nil, append(omitted, "outputs not kept: "+err.Error())
	}
	var unread []string
	var cut []string
	for _, r := range reqs {
		f := files[r.path]
		if f.State != assert.FileRegular {
			unread = append(unread, r.path)
			continue
		}
		kept = append(kept, &pb.OutputFile{Path: r.path, Size: f.Size, Content: f.Content, Truncated: f.Truncated})
		if f.Truncated {
			cut = append(cut, r.path)
		}
	}
	if len(cut) > 0 {
		omitted = append(omitted, omittedLine(cut, fmt.Sprintf("cut to their first %d KiB", maxOutputFileBytes>>10)))
	}
	if len(unread) > 0 {
		omitted = append(omitted, omittedLine(unread, "they could not be read (removed, replaced by a link, or unreadable)"))
	}
	return kept, omitted
}

// omittedLine is one outputs_omitted line: how many files, why, and the first few paths.
func omittedLine(paths []string, why string) string {
	names := paths[:min(len(paths), maxOmittedNames)]
	quoted := make([]string, len(names))
	for i, p := range names {
		quoted[i] = strconv.Quote(p)
	}
	more := ""
	if len(paths) > len(names) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(names))
	}
	noun := "files"
	if len(paths) == 1 {
		noun = "file"
	}
	return fmt.Sprintf("%d %s: %s: %s%s", len(paths), noun, why, strings.Join(quoted, ", "), more)
}
