package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errHelp reports that a command printed its help; run turns it into
// success (exit status 0).
var errHelp = errors.New("help printed")

// helpDoc is the help of one command: its synopsis lines and what it does.
type helpDoc struct {
	name     string   // "call", "keys generate", ...
	synopsis []string // without the leading "usage: "
	about    string
}

// newFlags returns the flag set of a command. The flag package prints
// nothing itself: parseFlags reports errors and help.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args, in which flags may come before, between or after
// the positional arguments, and returns the positional ones. On -h, -help
// or --help it writes the command's help to stdout and returns errHelp; on
// any other flag error it returns the error with the synopsis.
func parseFlags(fs *flag.FlagSet, doc helpDoc, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				writeHelp(stdout, doc, fs)
				return nil, errHelp
			}
			return nil, usageError(doc, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageError is err followed by the command's synopsis and where its help is.
func usageError(doc helpDoc, err error) error {
	return fmt.Errorf("%w\nusage: %s\n(weft %s --help shows the flags)", err, strings.Join(doc.synopsis, "\n       "), doc.name)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// writeHelp writes the synopsis, the description and the flags of a
// command (fs may be nil for a command without flags).
func writeHelp(w io.Writer, doc helpDoc, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.Join(doc.synopsis, "\n       "), doc.about)
	if fs == nil {
		return
	}
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, "\nflags:")
			first = false
		}
		metavar, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if metavar != "" {
			fmt.Fprintf(w, " %s", metavar)
		}
		fmt.Fprintf(w, "\n        %s", usage)
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" {
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprintln(w)
	})
}

// writeGroupHelp writes the help of a command group (weft keys, weft
// admin keys): the synopsis of each subcommand.
func writeGroupHelp(w io.Writer, group string, subs []helpDoc) {
	fmt.Fprintln(w, "usage:")
	for _, d := range subs {
		for _, s := range d.synopsis {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	fmt.Fprintf(w, "\nRun weft %s COMMAND --help for the flags of one command.\n", group)
}
