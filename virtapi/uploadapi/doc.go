// Package uploadapi is virt-api's share of DataVolume uploads, speaking
// CDI's API so that KubeVirt's `virtctl image-upload` works unchanged:
//
//   - [TokenServer] serves the upload.cdi.kubevirt.io/v1beta1 aggregated
//     API: discovery, and the creation of an UploadTokenRequest, which
//     answers with a token (virt/storage/upload) for the claim it names,
//     after a SubjectAccessReview of create on uploadtokenrequests;
//   - [ClaimBackends] tells the upload proxy (virt/storage/upload.Proxy)
//     where a claim's upload server is: the upload pod the DataVolume
//     controller made, reached at its pod IP, its certificate pinned to
//     the one the pod was made with;
//   - [RBAC] is CDI's cdi.kubevirt.io:edit and :view ClusterRoles,
//     aggregated into the built-in admin, edit and view roles.
//
// It must not touch claims, pods or DataVolumes beyond reading them: the
// DataVolume controller (controllers/datavolume) owns them.
package uploadapi
