package elicit
import ("testing";"math/rand/v2")
func TestTmpBuildRate(t *testing.T){
	ok, samp := 0, 0
	r := rand.New(rand.NewPCG(1,2))
	for range 10000 { b := make([]byte, 4*(1+r.IntN(6))); for i := range b { b[i]=byte(r.IntN(256)) }
		s, err := BuildSchema(fieldsFromBytes(b)...); if err==nil { ok++; if _, k := sampleContent(s); k { samp++ } } }
	t.Log(ok, samp)
}
