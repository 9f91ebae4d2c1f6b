package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

var completionDoc = helpDoc{name: "completion", synopsis: []string{"weft completion bash|zsh|fish"},
	about: "Prints the shell completion script for weft: commands, their flags (read from weft COMMAND --help)\n" +
		"and file names. Load it with, for example:\n" +
		"  source <(weft completion bash)          # in ~/.bashrc\n" +
		"  weft completion zsh > \"${fpath[1]}/_weft\"\n" +
		"  weft completion fish > ~/.config/fish/completions/weft.fish"}

// completionCommands are the commands completed after "weft".
var completionCommands = []string{"serve", "openapi", "gateway", "keys", "admin", "discover", "tools", "prompts", "resources",
	"templates", "call", "prompt", "read", "complete", "listen", "task", "logout", "version", "completion", "help"}

// completionCmd prints the completion script of a shell.
func completionCmd(args []string, stdout io.Writer) error {
	args, err := parseFlags(newFlags("completion"), completionDoc, args, stdout)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usageError(completionDoc, errors.New("completion needs the shell: bash, zsh or fish"))
	}
	cmds := strings.Join(completionCommands, " ")
	switch args[0] {
	case "bash":
		fmt.Fprintf(stdout, bashCompletion, cmds)
	case "zsh":
		fmt.Fprintf(stdout, "#compdef weft\nautoload -U bashcompinit && bashcompinit\n"+bashCompletion, cmds)
	case "fish":
		fmt.Fprintf(stdout, fishCompletion, cmds)
	default:
		return usageError(completionDoc, fmt.Errorf("completion knows bash, zsh and fish, not %q", args[0]))
	}
	return nil
}

const bashCompletion = `# weft completion (bash; zsh through bashcompinit)
_weft() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	if [[ $COMP_CWORD -eq 1 ]]; then
		COMPREPLY=($(compgen -W "%s" -- "$cur"))
		return
	fi
	if [[ $cur == -* ]]; then
		local flags
		flags=$(weft "${COMP_WORDS[1]}" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _weft weft
`

const fishCompletion = `# weft completion (fish)
complete -c weft -f -n __fish_use_subcommand -a "%s"
complete -c weft -n 'not __fish_use_subcommand; and string match -q -- "-*" (commandline -ct)' -a '(weft (commandline -opc)[2] --help 2>/dev/null | string match -r -- "--[a-z][a-z0-9-]*" | sort -u)'
`
