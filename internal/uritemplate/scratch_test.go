package uritemplate

import "testing"

func TestScratch(t *testing.T) {
	for _, c := range [][2]string{
		{"test://template/{id}/data", "test://template/123/data"},
		{"file:///{path}", "file:///README.md"},
		{"file:///{+path}", "file:///a/b/c.txt"},
		{"db://{schema}/{table}?x={y}", "db://public/users?x=5"},
		{"search{?q,lang}", "search?lang=en&q=go%20lang"},
		{"{a}{b}", "xyz"},
		{"{a}-{b}", "x-y-z"},
		{"{x}/{x}", "a/a"},
		{"ü/{v}", "%C3%BC/1"},
		{"ü/{v}", "ü/1"},
		{"{/a,b}{.ext}", "/x/y.tar.gz"},
		{"{;a,b}", ";a=1;b=2"},
		{"{#f}", "#a/b?c"},
		{"{v:3}", "abc"},
		{"{v:3}", "abcd"},
		{"{v}", "%C3%A9"},
		{"{v}", "%C3"},
	} {
		tp, err := Parse(c[0])
		if err != nil {
			t.Fatal(err)
		}
		v, ok := tp.Match(c[1])
		t.Logf("%s %s -> %v %v", c[0], c[1], v, ok)
	}
}
