package admission

// Paths the webhooks are served at.
const (
	MutatePath   = "/mutate-kubevirt-io-v1"
	ValidatePath = "/validate-kubevirt-io-v1"
)
