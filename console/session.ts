// Kept for this browser tab only: closing it signs out.
const KEY = "sluice.apiKey"
const ADMIN = "sluice.adminToken"

export const session = {
  key: () => sessionStorage.getItem(KEY),
  setKey: (key: string) => sessionStorage.setItem(KEY, key),
  adminToken: () => sessionStorage.getItem(ADMIN),
  setAdminToken: (token: string) => sessionStorage.setItem(ADMIN, token),
  signOut: () => {
    sessionStorage.removeItem(KEY)
    sessionStorage.removeItem(ADMIN)
  },
}
