// A cilium/ebpf loader that shows bpflog's annotated log and explanation when the kernel
// rejects a program, in place of the raw verifier log.
//
//	loader OBJ [--level 1|2]            load every program of OBJ (root, or CAP_BPF)
//	loader OBJ --log FILE [--prog NAME] annotate an existing verifier log (no privileges)
//
// Exit status: 0 loaded (or the log annotated), 1 a program rejected (its log annotated),
// 2 bad usage or input (one line on stderr). Every collection is closed before exit: nothing
// stays loaded or pinned.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
)

// The verifier's log buffer of each program: level 2 logs of big programs run to megabytes.
const logSize = 16 << 20

func main() {
	os.Exit(run(os.Args[1:]))
}

func usage() int {
	fmt.Fprintln(os.Stderr, "usage: loader OBJ [--level 1|2] | loader OBJ --log FILE [--prog NAME]")
	return 2
}

func run(args []string) int {
	var path, logPath string
	var prog *string
	level := uint32(2)
	for i := 0; i < len(args); i++ {
		arg := args[i]
		more := i+1 < len(args)
		switch {
		case arg == "--log" && more:
			i++
			logPath = args[i]
		case arg == "--prog" && more:
			i++
			prog = &args[i]
		case arg == "--level" && more && (args[i+1] == "1" || args[i+1] == "2"):
			i++
			level = uint32(args[i][0] - '0')
		case !strings.HasPrefix(arg, "-") && path == "":
			path = arg
		default:
			return usage()
		}
	}
	if path == "" || (prog != nil && logPath == "") {
		return usage()
	}
	// The same object's bytes for bpflog: its line info and sources.
	obj, err := openObject(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loader: %v\n", err)
		return 2
	}
	defer obj.close()
	if logPath != "" {
		return fromLog(obj, logPath, prog)
	}
	return load(obj, path, level)
}

func fromLog(obj *object, path string, prog *string) int {
	log, err := os.ReadFile(path)
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		fmt.Fprintf(os.Stderr, "loader: %s: %v\n", path, err)
		return 2
	}
	if err := obj.show(prog, log); err != nil {
		fmt.Fprintf(os.Stderr, "loader: %s: %v\n", path, err)
		return 2
	}
	return 0
}

// load loads each program of the object at path in a collection of its own (the object's maps
// with it), in the order of their names, and closes it: every program the kernel rejects is
// shown.
func load(obj *object, path string, level uint32) int {
	spec, err := ebpf.LoadCollectionSpec(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loader: %s: cilium/ebpf cannot open it: %v\n", path, err)
		return 2
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK.
	if err := rlimit.RemoveMemlock(); err != nil {
		fmt.Fprintf(os.Stderr, "loader: %v\n", err)
		return 2
	}
	for _, m := range spec.Maps {
		m.Pinning = ebpf.PinNone
		// A program array's initial slots name programs loaded with others: filled after the
		// programs are loaded, they play no part in their verification.
		if m.Type == ebpf.ProgramArray {
			m.Contents = nil
		}
	}
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	opts := ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogLevel: level, LogSize: logSize},
	}
	ret := 0
	for _, name := range names {
		one := spec.Copy()
		one.Programs = map[string]*ebpf.ProgramSpec{name: one.Programs[name]}
		coll, err := ebpf.NewCollectionWithOptions(one, opts)
		if err == nil {
			coll.Close()
			continue
		}
		var rejected *ebpf.VerifierError
		if !errors.As(err, &rejected) {
			fmt.Fprintf(os.Stderr, "loader: %s: %v\n", path, err)
			return 2
		}
		ret = 1
		cut := ""
		if rejected.Truncated {
			cut = " (the log is cut short)"
		}
		fmt.Fprintf(os.Stderr, "loader: %s: the kernel rejected program '%s': %v%s\n", path, name,
			rejected.Cause, cut)
		if len(rejected.Log) == 0 {
			continue
		}
		// cilium/ebpf splits the log into lines, each without its trailing white space.
		log := []byte(strings.Join(rejected.Log, "\n") + "\n")
		if err := obj.show(&name, log); err != nil {
			fmt.Fprintf(os.Stderr, "loader: %s: %v\n", path, err)
			return 2
		}
	}
	if ret == 0 {
		fmt.Printf("%s: loaded\n", path)
	}
	return ret
}
