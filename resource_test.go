package weft

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// TestRemoveResourceTemplate: removing a template takes it out of
// resources/templates/list, resources/read and completion, and notifies
// resources/list_changed once; removing it again reports false and notifies
// nothing.
func TestRemoveResourceTemplate(t *testing.T) {
	s := listenServer(t, nil)
	read := func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "item "+req.URIParams()["id"])}}, nil
	}
	complete := func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error) {
		return Completion{Values: []string{"1", "2"}}, nil
	}
	must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "test://items/{id}", Name: "item", Complete: complete}, read))
	must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "test://other/{id}", Name: "other"}, read))
	ts := startHTTP(t, s)
	_, st, _ := listen(t, ts.URL, "changes", M{"resourcesListChanged": true, "toolsListChanged": true})

	templates := func() []string {
		t.Helper()
		var list struct {
			ResourceTemplates []struct {
				URITemplate string `json:"uriTemplate"`
			} `json:"resourceTemplates"`
		}
		must(t, json.Unmarshal(rpc(t, ts.URL, 1, "resources/templates/list", params(nil)).Msg.Result, &list))
		var out []string
		for _, rt := range list.ResourceTemplates {
			out = append(out, rt.URITemplate)
		}
		return out
	}
	completion := M{"ref": M{"type": "ref/resource", "uri": "test://items/{id}"}, "argument": M{"name": "id", "value": ""}}
	if r := rpc(t, ts.URL, 2, "resources/read", params(M{"uri": "test://items/7"})); r.Status != http.StatusOK || r.Msg.Error != nil {
		t.Fatalf("read before removal: %v", r)
	}
	if r := rpc(t, ts.URL, 3, "completion/complete", params(completion)); r.Status != http.StatusOK || r.Msg.Error != nil {
		t.Fatalf("completion before removal: %v", r)
	}

	if !s.RemoveResourceTemplate("test://items/{id}") {
		t.Fatal("RemoveResourceTemplate of a registered template reported false")
	}
	if n := decodeNotification(t, nextFrame(st)); n.Method != "notifications/resources/list_changed" {
		t.Errorf("after RemoveResourceTemplate the stream got %+v, want resources/list_changed", n)
	}
	if got := templates(); len(got) != 1 || got[0] != "test://other/{id}" {
		t.Errorf("templates after removal %q, want only test://other/{id}", got)
	}
	rpc(t, ts.URL, 4, "resources/read", params(M{"uri": "test://items/7"})).wantError(t, http.StatusBadRequest, CodeInvalidParams)
	rpc(t, ts.URL, 5, "completion/complete", params(completion)).wantError(t, http.StatusBadRequest, CodeInvalidParams)

	// Nothing to remove: false, and no notification. The next frame must be
	// the tools change that follows, not a resources one.
	for _, uri := range []string{"test://items/{id}", "test://items/7", "test://a", ""} {
		if s.RemoveResourceTemplate(uri) {
			t.Errorf("RemoveResourceTemplate(%q) reported true", uri)
		}
	}
	addText(t, s, "t2", "two")
	if n := decodeNotification(t, nextFrame(st)); n.Method != "notifications/tools/list_changed" {
		t.Errorf("a removal of nothing notified %+v", n)
	}
	// Direct resources are not templates.
	if r := rpc(t, ts.URL, 6, "resources/read", params(M{"uri": "test://a"})); r.Status != http.StatusOK || r.Msg.Error != nil {
		t.Errorf("the direct resource went with the template: %v", r)
	}
}

// nextFrame returns the next message frame of st.
func nextFrame(st *sseStream) []byte {
	_, f := st.nextMsg()
	return f
}
