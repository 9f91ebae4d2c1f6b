// Package petstore is a small HTTP API to demonstrate and test the openapi
// package against: the upstream that examples/openapi/petstore.yaml
// describes. It keeps its pets in memory; prices are exact decimals (kept as
// the JSON literal received).
package petstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Pet is one pet.
type Pet struct {
	ID    int64       `json:"id"`
	Name  string      `json:"name"`
	Tag   string      `json:"tag,omitempty"`
	Price json.Number `json:"price,omitempty"`
}

// Store is the API: an http.Handler over an in-memory set of pets.
type Store struct {
	mu     sync.Mutex
	pets   map[int64]Pet
	nextID int64
	mux    *http.ServeMux
	// Token, when set, is the bearer token every request must carry.
	token string
}

// New returns a store with three pets. A non-empty token is required as
// "Authorization: Bearer <token>" on every request.
func New(token string) *Store {
	s := &Store{pets: map[int64]Pet{}, nextID: 1, token: token, mux: http.NewServeMux()}
	for _, p := range []Pet{{Name: "Rex", Tag: "dog", Price: "120.50"}, {Name: "Tom", Tag: "cat", Price: "80"}, {Name: "Nemo", Tag: "fish", Price: "9007199254740993"}} {
		p.ID = s.nextID
		s.pets[p.ID] = p
		s.nextID++
	}
	s.mux.HandleFunc("GET /pets", s.list)
	s.mux.HandleFunc("POST /pets", s.create)
	s.mux.HandleFunc("GET /pets/{id}", s.get)
	s.mux.HandleFunc("DELETE /pets/{id}", s.remove)
	s.mux.HandleFunc("GET /pets/{id}/photo", s.photo)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.token != "" && r.Header.Get("Authorization") != "Bearer "+s.token {
		w.Header().Set("WWW-Authenticate", `Bearer realm="petstore"`)
		problem(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Pets returns the pets, by id.
func (s *Store) Pets() []Pet {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Pet, 0, len(s.pets))
	for _, p := range s.pets {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Pet) int { return int(a.ID - b.ID) })
	return out
}

func problem(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "title": http.StatusText(status), "detail": msg})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Store) list(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			problem(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = n
	}
	tags := r.URL.Query()["tag"]
	out := []Pet{}
	for _, p := range s.Pets() {
		if len(tags) > 0 && !slices.Contains(tags, p.Tag) {
			continue
		}
		if len(out) < limit {
			out = append(out, p)
		}
	}
	reply(w, http.StatusOK, out)
}

func (s *Store) create(w http.ResponseWriter, r *http.Request) {
	var in Pet
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || strings.TrimSpace(in.Name) == "" {
		problem(w, http.StatusBadRequest, "the body must be a pet with a name")
		return
	}
	s.mu.Lock()
	in.ID = s.nextID
	s.nextID++
	s.pets[in.ID] = in
	s.mu.Unlock()
	reply(w, http.StatusCreated, in)
}

func (s *Store) find(w http.ResponseWriter, r *http.Request) (Pet, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		problem(w, http.StatusBadRequest, "petId must be an integer")
		return Pet{}, false
	}
	s.mu.Lock()
	p, ok := s.pets[id]
	s.mu.Unlock()
	if !ok {
		problem(w, http.StatusNotFound, fmt.Sprintf("no pet %d", id))
	}
	return p, ok
}

func (s *Store) get(w http.ResponseWriter, r *http.Request) {
	if p, ok := s.find(w, r); ok {
		reply(w, http.StatusOK, p)
	}
}

func (s *Store) remove(w http.ResponseWriter, r *http.Request) {
	p, ok := s.find(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	delete(s.pets, p.ID)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// photo answers a tiny PNG-like blob (a fixed header and the pet id).
func (s *Store) photo(w http.ResponseWriter, r *http.Request) {
	p, ok := s.find(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(bytes.Join([][]byte{[]byte("\x89PNG\r\n\x1a\n"), []byte(strconv.FormatInt(p.ID, 10))}, nil))
}
