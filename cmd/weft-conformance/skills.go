package main

import (
	"embed"
	"io/fs"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/skills"
)

// skillFiles holds the fixture skills: testdata/skills/<skill-path>/SKILL.md
// and their supporting files.
//
//go:embed testdata/skills
var skillFiles embed.FS

// addSkills serves the fixture skills through the Skills extension
// (SEP-2640): skills/list, skills/get, resources/directory/read, and a
// skill:// resource per file.
func addSkills(s *weft.Server, add func(error)) {
	sub, err := fs.Sub(skillFiles, "testdata/skills")
	if err != nil {
		add(err)
		return
	}
	bundles, err := skills.LoadAll(sub, nil)
	if err != nil {
		add(err)
		return
	}
	add(skills.Register(s, bundles...))
}
